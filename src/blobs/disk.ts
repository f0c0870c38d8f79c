import crypto from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { BlobStore, TempBlob } from './store.js';

const SHA256 = /^[0-9a-f]{64}$/;

/**
 * Blobs on local disk: `<root>/blobs/ab/cd/<sha256>` and temporary files in `<root>/tmp/`, named
 * after the process that writes them (`<pid>-<random>`), so that a start-up sweep can tell the
 * leftovers of a crashed process from the uploads of a live one. Both live under one root, on one
 * file system, so that moving a file into place is an atomic rename.
 */
export class DiskBlobStore implements BlobStore {
  private readonly blobs: string;
  private readonly tmp: string;

  constructor(root: string) {
    this.blobs = path.join(root, 'blobs');
    this.tmp = path.join(root, 'tmp');
    fs.mkdirSync(this.blobs, { recursive: true });
    fs.mkdirSync(this.tmp, { recursive: true });
  }

  pathOf(sha256: string): string {
    if (!SHA256.test(sha256)) throw new Error('not a SHA-256 hex digest');
    return path.join(this.blobs, sha256.slice(0, 2), sha256.slice(2, 4), sha256);
  }

  async createTemp(): Promise<TempBlob> {
    const file = path.join(this.tmp, `${process.pid}-${crypto.randomBytes(12).toString('hex')}`);
    let discarded = false;
    return {
      path: file,
      stream: () => fs.createWriteStream(file, { flags: 'wx' }),
      discard: async () => {
        if (discarded) return;
        discarded = true;
        await fsp.rm(file, { force: true });
      },
    };
  }

  async commit(temp: TempBlob, sha256: string): Promise<void> {
    const target = this.pathOf(sha256);
    await fsp.mkdir(path.dirname(target), { recursive: true });
    // The data must be on disk before the name points at it: a crash after the rename must not
    // leave a blob whose content was never written.
    const handle = await fsp.open(temp.path, 'r+');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fsp.rename(temp.path, target);
    await syncDir(path.dirname(target));
  }

  async open(sha256: string) {
    const file = this.pathOf(sha256);
    const stat = await fsp.stat(file);
    return { stream: fs.createReadStream(file), size: stat.size };
  }

  async delete(sha256: string): Promise<void> {
    await fsp.rm(this.pathOf(sha256), { force: true });
  }

  async *list(): AsyncIterable<{ sha256: string; modifiedAt: number }> {
    for (const a of await readdir(this.blobs)) {
      for (const b of await readdir(path.join(this.blobs, a))) {
        for (const name of await readdir(path.join(this.blobs, a, b))) {
          if (!SHA256.test(name)) continue;
          const stat = await fsp.stat(path.join(this.blobs, a, b, name)).catch(() => null);
          if (stat) yield { sha256: name, modifiedAt: stat.mtimeMs };
        }
      }
    }
  }

  async sweepTemps(): Promise<number> {
    let removed = 0;
    for (const name of await readdir(this.tmp)) {
      const pid = Number(name.split('-', 1)[0]);
      if (Number.isInteger(pid) && pid !== process.pid && isAlive(pid)) continue;
      if (pid === process.pid) continue;
      await fsp.rm(path.join(this.tmp, name), { force: true, recursive: true });
      removed++;
    }
    return removed;
  }
}

async function readdir(dir: string): Promise<string[]> {
  return fsp.readdir(dir).catch(() => []);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
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
