import { sql, type Kysely, type Transaction } from 'kysely';
import { HashLocks } from '../blobs/locks.js';
import type { BlobStore } from '../blobs/store.js';
import type { Store } from './db.js';
import type { Database } from './schema.js';

const local = new HashLocks();

/**
 * Stores files, then writes the row that refers to them, with exclusive use of their content
 * hashes across every process of the deployment from before the files are committed until the
 * row is: an in-process lock on SQLite (where one server runs), PostgreSQL advisory locks (held
 * until the transaction ends) where several servers share the store.
 *
 * On SQLite the files are committed (fsync, rename) *before* the row's transaction begins: the
 * database has one writer at a time, and no other write waits behind a 50 MB fsync. On
 * PostgreSQL the transaction only holds the advisory locks meanwhile, which stop nobody else.
 *
 * A crash between the two leaves an unreferenced blob, which the sweeps remove (`sweepBlobs`);
 * never a row without its file. And `removeUnreferencedBlobs` holds the same locks, so that a
 * delete can never remove a file that an upload of the same bytes has just committed again.
 */
export async function withCommittedBlobs<T>(
  store: Store,
  hashes: string[],
  commit: () => Promise<void>,
  work: (trx: Transaction<Database>) => Promise<T>,
): Promise<T> {
  const sorted = [...new Set(hashes)].sort();
  if (store.dialect === 'postgres') {
    return store.db.transaction().execute(async (trx) => {
      for (const hash of sorted) await sql`select pg_advisory_xact_lock(hashtextextended(${hash}, 0))`.execute(trx);
      await commit();
      return work(trx);
    });
  }
  return local.with(sorted, async () => {
    await commit();
    return store.db.transaction().execute(work);
  });
}

/**
 * Removes the blobs among `hashes` that no document or document revision refers to any more,
 * holding their locks (see `withCommittedBlobs`); answers the hashes it removed. On SQLite no
 * transaction is needed: under the lock no row of this server can start referring to them, and
 * reading takes no write lock.
 */
export async function removeUnreferencedBlobs(store: Store, blobs: BlobStore, hashes: string[]): Promise<string[]> {
  const sorted = [...new Set(hashes)].sort();
  if (sorted.length === 0) return [];
  const remove = async (db: Store['db'] | Transaction<Database>) => {
    const gone = await unreferenced(db, sorted);
    for (const hash of gone) await blobs.delete(hash);
    return gone;
  };
  if (store.dialect === 'postgres') {
    return store.db.transaction().execute(async (trx) => {
      for (const hash of sorted) await sql`select pg_advisory_xact_lock(hashtextextended(${hash}, 0))`.execute(trx);
      return remove(trx);
    });
  }
  return local.with(sorted, () => remove(store.db));
}

/** The hashes among `hashes` that no document and no document revision refers to any more. */
export async function unreferenced(db: Kysely<Database>, hashes: string[]): Promise<string[]> {
  if (hashes.length === 0) return [];
  const inUse = new Set<string | null>();
  for (const table of ['documents', 'document_revisions'] as const) {
    const used = await db
      .selectFrom(table)
      .select(['sha256', 'rendition_sha256'])
      .where((eb) => eb.or([eb('sha256', 'in', hashes), eb('rendition_sha256', 'in', hashes)]))
      .execute();
    for (const r of used) inUse.add(r.sha256).add(r.rendition_sha256);
  }
  return hashes.filter((h) => !inUse.has(h));
}

/** Every blob hash a row refers to: documents and the revisions that keep files (for the start-up sweep). */
export async function referencedBlobs(db: Kysely<Database>): Promise<Set<string>> {
  const referenced = new Set<string>();
  for (const table of ['documents', 'document_revisions'] as const) {
    const rows = await db.selectFrom(table).select(['sha256', 'rendition_sha256']).execute();
    for (const r of rows) {
      referenced.add(r.sha256);
      if (r.rendition_sha256 !== null) referenced.add(r.rendition_sha256);
    }
  }
  return referenced;
}
