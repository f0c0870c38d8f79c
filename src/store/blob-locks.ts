import { sql, type Kysely, type Transaction } from 'kysely';
import { HashLocks } from '../blobs/locks.js';
import type { Staging } from '../blobs/staging.js';
import { UploadGone, type BlobStore, type BlobUpload } from '../blobs/store.js';
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
 * The files are committed (`commit`: an fsync and a rename, a server-side copy, one `blob_files`
 * row; see `commitUpload`) *before* the row's transaction writes anything else: on SQLite the
 * transaction begins only afterwards, and on PostgreSQL it holds only the advisory locks (and
 * the upload's journal row) meanwhile, which stop nobody else. `commit` is given the database to
 * use: on PostgreSQL that transaction, so that what it writes there commits with the row.
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
  commit: (db: Kysely<Database>) => Promise<void>,
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
      await commit(trx);
      return finish(trx);
    });
  }
  return local.with(sorted, async () => {
    await commit(store.db);
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

/** A file being streamed into the blob store while it is received, with its row in the upload journal. */
export interface StoreUpload {
  id: string;
  writer: BlobUpload;
}

/**
 * Starts streaming a file into the blob store as it is received (`BlobStore.startUpload`): its
 * journal row (`blob_uploads`) is written before the store gets a byte, so that a crash leaves
 * nothing the sweep does not find. `null` when the store takes the staged file whole (disk).
 */
export async function beginUpload(store: Store, blobs: BlobStore, staged: string): Promise<StoreUpload | null> {
  const id = newId();
  const writer = blobs.startUpload(id, {
    staged,
    remember: async (ref) => {
      const updated = await store.db.updateTable('blob_uploads').set({ ref }).where('id', '=', id).executeTakeFirst();
      if (Number(updated.numUpdatedRows) !== 1) throw new UploadGone(id);
    },
  });
  if (!writer) return null;
  await store.db.insertInto('blob_uploads').values({ id, ref: null, created_at: new Date().toISOString() }).execute();
  return { id, writer };
}

/**
 * Within `withCommittedBlobs`' commit (`db`: on PostgreSQL its transaction, which holds the
 * hash's lock): takes the upload's journal row — on PostgreSQL deleted in that transaction, so
 * that the row lock keeps the sweep away and the row comes back if the transaction fails — and
 * makes the received bytes visible under `sha256`. `UploadGone` when the sweep removed the upload.
 */
export async function commitUpload(store: Store, db: Kysely<Database>, upload: StoreUpload, sha256: string, size: number): Promise<void> {
  if (store.dialect === 'postgres') {
    const taken = await db.deleteFrom('blob_uploads').where('id', '=', upload.id).returning('id').execute();
    if (taken.length === 0) throw new UploadGone(upload.id);
    await upload.writer.commit(sha256, size, db);
    return;
  }
  await local.with([uploadLock(upload.id)], async () => {
    const row = await db.selectFrom('blob_uploads').select('id').where('id', '=', upload.id).executeTakeFirst();
    if (!row) throw new UploadGone(upload.id);
    await upload.writer.commit(sha256, size, db);
    await db.deleteFrom('blob_uploads').where('id', '=', upload.id).execute();
  });
}

/**
 * Stops an upload that will not be committed (refused, failed) and removes what it left in the
 * store and its journal row. Without its row (the sweep took it while the upload was still
 * writing) what it wrote since is removed all the same: once stopped, nothing more comes.
 */
export async function abandonUpload(store: Store, blobs: BlobStore, upload: StoreUpload): Promise<void> {
  await upload.writer.abort();
  if (!(await removeUpload(store, blobs, upload.id, null))) await blobs.discardUpload(upload.id, null, store.db);
}

/**
 * Removes upload `id` and its journal row, under its row's lock (PostgreSQL) or its in-process
 * lock (SQLite), when its row is there (and older than `cutoff`, when given); answers whether it did.
 */
async function removeUpload(store: Store, blobs: BlobStore, id: string, cutoff: string | null): Promise<boolean> {
  if (store.dialect === 'postgres') {
    return store.db.transaction().execute(async (trx) => {
      // Waits for a chunk being written under the row (`for share`) or a commit holding it.
      let query = trx.deleteFrom('blob_uploads').where('id', '=', id);
      if (cutoff) query = query.where('created_at', '<=', cutoff);
      const [row] = await query.returning('ref').execute();
      if (!row) return false;
      await blobs.discardUpload(id, row.ref, trx);
      return true;
    });
  }
  return local.with([uploadLock(id)], async () => {
    let query = store.db.selectFrom('blob_uploads').select('ref').where('id', '=', id);
    if (cutoff) query = query.where('created_at', '<=', cutoff);
    const row = await query.executeTakeFirst();
    if (!row) return false;
    await blobs.discardUpload(id, row.ref, store.db);
    await store.db.deleteFrom('blob_uploads').where('id', '=', id).execute();
    return true;
  });
}

function uploadLock(id: string): string {
  return `upload:${id}`;
}

/**
 * The sweep of abandoned uploads, by age: journal rows older than `olderThan` (epoch ms) were
 * left by a crash (or by an upload that outlived the grace period, which then fails cleanly:
 * its next write or its commit finds its row gone). Answers how many it removed.
 */
export async function sweepUploads(store: Store, blobs: BlobStore, olderThan: number): Promise<number> {
  const cutoff = new Date(olderThan).toISOString();
  let removed = 0;
  let after = '';
  for (;;) {
    const batch = await store.db.selectFrom('blob_uploads').select('id').where('created_at', '<=', cutoff).where('id', '>', after).orderBy('id').limit(200).execute();
    if (batch.length === 0) break;
    for (const { id } of batch) if (await removeUpload(store, blobs, id, cutoff)) removed++;
    after = batch[batch.length - 1]!.id;
  }
  return removed;
}

/**
 * Clean-up after a crash, at start-up and then periodically: staged files of processes that no
 * longer run, uploads abandoned in the store (journal rows older than `uploadGraceMs`), what
 * interrupted puts left that no journal knows (older than that, and than an hour), and the blob
 * journal's orphans (`sweepBlobJournal`, older than `graceMs`).
 */
export async function sweepBlobs(
  store: Store,
  blobs: BlobStore,
  staging: Staging,
  graceMs: number,
  now = Date.now(),
  uploadGraceMs = graceMs,
): Promise<{ temps: number; uploads: number; partial: number; blobs: number }> {
  const temps = await staging.sweep(now);
  const uploads = await sweepUploads(store, blobs, now - uploadGraceMs);
  const partial = await blobs.sweepPartial(now - Math.max(graceMs, uploadGraceMs, 60 * 60_000));
  const { removed } = await sweepBlobJournal(store, blobs, graceMs, now);
  return { temps, uploads, partial, blobs: removed };
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
