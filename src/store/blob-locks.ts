import { sql, type Transaction } from 'kysely';
import { HashLocks } from '../blobs/locks.js';
import type { Store } from './db.js';
import type { Database } from './schema.js';

const local = new HashLocks();

/**
 * Runs `work` in a transaction that has exclusive use of the given content hashes across every
 * process of the deployment: PostgreSQL advisory locks (held until the transaction ends) when
 * several servers may share the store, an in-process lock on SQLite, where one server runs.
 *
 * Storing a blob and writing the row that refers to it happen inside one such section, and so
 * do "does any row still refer to this blob?" and removing it: an upload of the same bytes can
 * never slip between the check and the removal.
 */
export async function withBlobLock<T>(store: Store, hashes: string[], work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  const sorted = [...new Set(hashes)].sort();
  if (store.dialect === 'postgres') {
    return store.db.transaction().execute(async (trx) => {
      for (const hash of sorted) await sql`select pg_advisory_xact_lock(hashtextextended(${hash}, 0))`.execute(trx);
      return work(trx);
    });
  }
  return local.with(sorted, () => store.db.transaction().execute(work));
}
