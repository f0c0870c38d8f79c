import crypto from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { BlobNotFound, checkHash, SHA256, type BlobStore, type BlobUpload, type ByteRange } from './store.js';

/**
 * Blobs on local disk: `<root>/blobs/ab/cd/<sha256>`. A staged file (`Staging`, under
 * `<root>/tmp/`, the same file system) is synced and then renamed into place, so that a name
 * never points at a file whose content was not written whole. The staged file is the upload:
 * nothing is streamed elsewhere while it is received (`startUpload` answers `null`).
 */
export class DiskBlobStore implements BlobStore {
  readonly kind = 'disk';
  private readonly blobs: string;
  /** Copies in progress when staging is on another file system (renamed into place when complete). */
  private readonly incoming: string;

  constructor(root: string) {
    this.blobs = path.join(root, 'blobs');
    this.incoming = path.join(this.blobs, '.incoming');
    fs.mkdirSync(this.blobs, { recursive: true });
  }

  pathOf(sha256: string): string {
    checkHash(sha256);
    return path.join(this.blobs, sha256.slice(0, 2), sha256.slice(2, 4), sha256);
  }

  startUpload(): BlobUpload | null {
    return null;
  }

  async discardUpload(): Promise<void> {}

  /** Flushes the staged file's data while it is checked: `put`'s own sync then has nothing left to write. */
  async prepare(file: string): Promise<void> {
    await syncFile(file);
  }

  /** Copies under `.incoming/` (staging on another file system) not yet renamed into place. */
  async *listUploads(): AsyncIterable<string> {
    for (const name of await readdir(this.incoming)) yield name;
  }

  /**
   * The same work whether or not the content is stored already (the staged file synced and
   * renamed over it: the same bytes), so that an upload's time does not tell whether another
   * workspace stored these bytes before.
   */
  async put(file: string, sha256: string, size?: number): Promise<void> {
    const target = this.pathOf(sha256);
    if (size !== undefined && (await fsp.stat(file)).size !== size) throw new Error('the staged file does not have its recorded size');
    await fsp.mkdir(path.dirname(target), { recursive: true });
    // The data must be on disk before the name points at it: a crash after the rename must not
    // leave a blob whose content was never written.
    await syncFile(file);
    try {
      await fsp.rename(file, target);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
      // Staging on another file system: copy beside the target, then rename there.
      const beside = path.join(this.incoming, `${sha256}.${crypto.randomBytes(6).toString('hex')}`);
      await fsp.mkdir(this.incoming, { recursive: true });
      try {
        await fsp.copyFile(file, beside);
        await syncFile(beside);
        await fsp.rename(beside, target);
      } finally {
        await fsp.rm(beside, { force: true });
      }
    }
    await syncDir(path.dirname(target));
  }

  async open(sha256: string, range?: ByteRange) {
    // Opened here, not when the stream first reads: a file that cannot be opened (gone, or no
    // descriptor left) is an error before any answer has begun.
    const handle = await fsp.open(this.pathOf(sha256), 'r').catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') throw new BlobNotFound(sha256);
      throw error;
    });
    try {
      const stat = await handle.stat();
      return { stream: handle.createReadStream(range ? { start: range.start, end: range.end } : {}), size: stat.size };
    } catch (error) {
      await handle.close().catch(() => {});
      throw error;
    }
  }

  async stat(sha256: string) {
    const stat = await fsp.stat(this.pathOf(sha256)).catch(() => null);
    return stat ? { size: stat.size } : null;
  }

  async delete(sha256: string): Promise<void> {
    await fsp.rm(this.pathOf(sha256), { force: true });
  }

  async *list(): AsyncIterable<string> {
    for (const a of await readdir(this.blobs)) {
      if (!/^[0-9a-f]{2}$/.test(a)) continue;
      for (const b of await readdir(path.join(this.blobs, a))) {
        for (const name of await readdir(path.join(this.blobs, a, b))) if (SHA256.test(name)) yield name;
      }
    }
  }

  /** A rename is atomic: an interrupted put leaves at most a copy under `.incoming/` (staging on another file system). */
  async sweepPartial(olderThan: number): Promise<number> {
    let removed = 0;
    for (const name of await readdir(this.incoming)) {
      const file = path.join(this.incoming, name);
      const stat = await fsp.stat(file).catch(() => null);
      if (stat && stat.mtimeMs < olderThan) {
        await fsp.rm(file, { force: true });
        removed++;
      }
    }
    return removed;
  }

  async presign(): Promise<null> {
    return null;
  }

  async check(): Promise<void> {
    await fsp.access(this.blobs, fs.constants.W_OK);
  }

  async close(): Promise<void> {}
}

async function readdir(dir: string): Promise<string[]> {
  return fsp.readdir(dir).catch(() => []);
}

async function syncFile(file: string): Promise<void> {
  const handle = await fsp.open(file, 'r+');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function syncDir(dir: string): Promise<void> {
  const handle = await fsp.open(dir, 'r').catch(() => null);
  if (!handle) return;
  try {
    await handle.sync().catch(() => {});
  } finally {
    await handle.close();
  }
}
