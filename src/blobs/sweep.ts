import type { BlobStore } from './store.js';

/**
 * Clean-up after a crash, at start-up and then periodically: temporary files of processes that
 * no longer run, and blobs that no row refers to (committed just before a crash, before their
 * row was written, or left by a delete that crashed before removing its file). `graceMs` spares
 * blobs younger than that: uploads in flight commit their files before writing their rows (at
 * start-up on SQLite, where no upload is in flight yet, there is no grace). `remove` is how an
 * unreferenced blob goes; the periodic sweep passes one that checks again under the blob's lock,
 * since a row may have come to refer to it since `referenced` was read.
 */
export async function sweepBlobs(
  blobs: BlobStore,
  referenced: () => Promise<Set<string>>,
  graceMs: number,
  now = Date.now(),
  remove: (sha256: string) => Promise<boolean> = async (sha256) => {
    await blobs.delete(sha256);
    return true;
  },
): Promise<{ temps: number; blobs: number }> {
  const temps = await blobs.sweepTemps();
  const inUse = await referenced();
  let removed = 0;
  for await (const blob of blobs.list()) {
    if (inUse.has(blob.sha256) || now - blob.modifiedAt < graceMs) continue;
    if (await remove(blob.sha256)) removed++;
  }
  return { temps, blobs: removed };
}
