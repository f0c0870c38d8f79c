import { sql, type Kysely, type Transaction } from 'kysely';
import { HashLocks } from '../blobs/locks.js';
import type { Staging } from '../blobs/staging.js';
import type { BlobStore } from '../blobs/store.js';
import { newId } from '../domain/ids.js';
import type { Store } from './db.js';
import type { Database } from './schema.js';

const local = new HashLocks();

/**
 * Stores files, then writes the row that refers to them, with exclusive use of their content
 * hashes across every process of the deployment from before the files are committed until the
 * row is: an in-process lock on SQLite (where one server runs), PostgreSQL advisory locks (held
 * until the transaction ends) where several servers share the store.
 *
 * The files are committed (`commit`: put into the blob store: an fsync and a rename, a multipart
 * upload, a transaction of chunks) *before* the row's transaction does any write: on SQLite the
 * transaction begins only afterwards, and on PostgreSQL it holds only the advisory locks
 * meanwhile, which stop nobody else.
 *
 * Each hash is written to the blob journal (`blob_checks`) before its file is put, and the entry
 * is removed in the row's transaction: a crash in between leaves an unreferenced file *and* its
 * journal entry, which the sweep (`sweepBlobJournal`) reads once it is older than its grace
 * period. Never a row without its file. `removeUnreferencedBlobs` holds the same locks, so that a
 * delete can never remove a file that an upload of the same bytes has just committed again.
 */
export async function withCommittedBlobs<T>(
  store: Store,
  hashes: string[],
  commit: () => Promise<void>,
  work: (trx: Transaction<Database>) => Promise<T>,
): Promise<T> {
  const sorted = [...new Set(hashes)].sort();
  const entries = await journal(store.db, sorted, 'upload');
  const finish = async (trx: Transaction<Database>) => {
    const result = await work(trx);
    await trx.deleteFrom('blob_checks').where('id', 'in', entries).execute();
    return result;
  };
  if (store.dialect === 'postgres') {
    return store.db.transaction().execute(async (trx) => {
      await advisoryLocks(trx, sorted);
      await commit();
      return finish(trx);
    });
  }
  return local.with(sorted, async () => {
    await commit();
    return store.db.transaction().execute(finish);
  });
}

/** Writes journal entries for `hashes` (in `db`, which may be the transaction that drops their rows); answers their ids. */
export async function journal(db: Kysely<Database>, hashes: string[], reason: 'upload' | 'delete'): Promise<string[]> {
  if (hashes.length === 0) return [];
  const now = new Date().toISOString();
  const rows = [...new Set(hashes)].map((sha256) => ({ id: newId(), sha256, reason, created_at: now }));
  await db.insertInto('blob_checks').values(rows).execute();
  return rows.map((r) => r.id);
}

async function advisoryLocks(trx: Transaction<Database>, sorted: string[]): Promise<void> {
  for (const hash of sorted) await sql`select pg_advisory_xact_lock(hashtextextended(${hash}, 0))`.execute(trx);
}

/** Runs `work` holding the locks of `hashes` (see `withCommittedBlobs`). */
async function underLocks<T>(store: Store, hashes: string[], work: (db: Kysely<Database>) => Promise<T>): Promise<T> {
  const sorted = [...new Set(hashes)].sort();
  if (store.dialect === 'postgres') {
    return store.db.transaction().execute(async (trx) => {
      await advisoryLocks(trx, sorted);
      return work(trx);
    });
  }
  // On SQLite no transaction is needed: under the lock no row of this server can start
  // referring to them, and reading takes no write lock.
  return local.with(sorted, () => work(store.db));
}

/**
 * Removes the blobs among `hashes` that no document or document revision refers to any more,
 * holding their locks; answers the hashes it removed. The `delete` journal entries of these
 * hashes that were written before the check are settled by it and go too (an upload's entries
 * belong to that upload, which may still be on its way to the lock).
 */
export async function removeUnreferencedBlobs(store: Store, blobs: BlobStore, hashes: string[]): Promise<string[]> {
  if (hashes.length === 0) return [];
  return underLocks(store, hashes, async (db) => {
    const entries = await db.selectFrom('blob_checks').select('id').where('sha256', 'in', hashes).where('reason', '=', 'delete').execute();
    const gone = await unreferenced(db, [...new Set(hashes)].sort());
    for (const hash of gone) await blobs.delete(hash);
    if (entries.length > 0) await db.deleteFrom('blob_checks').where('id', 'in', entries.map((e) => e.id)).execute();
    return gone;
  });
}

/**
 * The sweep of orphans, by age: journal entries older than `graceMs` were left by an upload or a
 * delete that crashed (or failed) between its file and its row. Each hash is checked again under
 * its lock; an unreferenced file is removed; the entries go. Nothing lists the stored files.
 * `graceMs` must exceed the longest time an upload takes from its journal entry to its row
 * (putting one file): an upload in flight is never an orphan.
 */
export async function sweepBlobJournal(store: Store, blobs: BlobStore, graceMs: number, now = Date.now()): Promise<{ checked: number; removed: number }> {
  const cutoff = new Date(now - graceMs).toISOString();
  let checked = 0;
  let removed = 0;
  for (;;) {
    const batch = await store.db.selectFrom('blob_checks').select('sha256').distinct().where('created_at', '<=', cutoff).orderBy('sha256').limit(200).execute();
    if (batch.length === 0) break;
    for (const { sha256 } of batch) {
      await underLocks(store, [sha256], async (db) => {
        // Read before the check: every entry seen here was committed before it, so the check settles it.
        const entries = await db.selectFrom('blob_checks').select('id').where('sha256', '=', sha256).where('created_at', '<=', cutoff).execute();
        if ((await unreferenced(db, [sha256])).length > 0) {
          await blobs.delete(sha256);
          removed++;
        }
        if (entries.length > 0) await db.deleteFrom('blob_checks').where('id', 'in', entries.map((e) => e.id)).execute();
      });
      checked++;
    }
  }
  return { checked, removed };
}

/**
 * Clean-up after a crash, at start-up and then periodically: staged files of processes that no
 * longer run, what interrupted puts left in the store (older than `graceMs`), and the journal's
 * orphans (`sweepBlobJournal`).
 */
export async function sweepBlobs(
  store: Store,
  blobs: BlobStore,
  staging: Staging,
  graceMs: number,
  now = Date.now(),
): Promise<{ temps: number; partial: number; blobs: number }> {
  const temps = await staging.sweep(now);
  const partial = await blobs.sweepPartial(now - Math.max(graceMs, 60 * 60_000));
  const { removed } = await sweepBlobJournal(store, blobs, graceMs, now);
  return { temps, partial, blobs: removed };
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
