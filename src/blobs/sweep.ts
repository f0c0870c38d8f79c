import type { BlobStore } from './store.js';

/**
 * Start-up clean-up after a crash: temporary files of processes that no longer run, and blobs
 * that no row refers to (moved into place just before a crash, or left by a delete that crashed
 * before removing its file). `graceMs` spares blobs younger than that, for deployments where other
 * processes may be between storing a blob and writing its row (several servers on PostgreSQL);
 * the embedded SQLite deployment has one server and sweeps with no grace.
 */
export async function sweepBlobs(
  blobs: BlobStore,
  referenced: () => Promise<Set<string>>,
  graceMs: number,
  now = Date.now(),
): Promise<{ temps: number; blobs: number }> {
  const temps = await blobs.sweepTemps();
  const inUse = await referenced();
  let removed = 0;
  for await (const blob of blobs.list()) {
    if (inUse.has(blob.sha256) || now - blob.modifiedAt < graceMs) continue;
    await blobs.delete(blob.sha256);
    removed++;
  }
  return { temps, blobs: removed };
}
