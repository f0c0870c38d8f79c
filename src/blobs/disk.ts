import crypto from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { BlobStore, TempBlob } from './store.js';

const SHA256 = /^[0-9a-f]{64}$/;
/** This process, told apart from an earlier one that had the same pid (containers restart as pid 1). */
const INSTANCE = crypto.randomBytes(6).toString('hex');
const HOST = os.hostname().replace(/[^A-Za-z0-9.]/g, '_');
/** A temporary file of another host, or of a name we do not know, is removed once it is this old. */
const FOREIGN_TEMP_MAX_AGE_MS = 24 * 3_600_000;

/**
 * Blobs on local disk: `<root>/blobs/ab/cd/<sha256>` and temporary files in `<root>/tmp/`, named
 * after the process that writes them (`<host>-<pid>-<instance>-<random>`), so that a start-up
 * sweep can tell the leftovers of a crashed process from the uploads of a live one. Both live
 * under one root, on one file system, so that moving a file into place is an atomic rename.
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
    const file = path.join(this.tmp, `${HOST}-${process.pid}-${INSTANCE}-${crypto.randomBytes(12).toString('hex')}`);
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
    const existing = await fsp.stat(target).catch(() => null);
    if (existing) {
      // The same content is stored already. Touch it, so that a sweep's grace period counts from now.
      const now = new Date();
      await fsp.utimes(target, now, now);
      await temp.discard();
      return;
    }
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

  async sweepTemps(now = Date.now()): Promise<number> {
    let removed = 0;
    for (const name of await readdir(this.tmp)) {
      const file = path.join(this.tmp, name);
      if (await isLeftOver(name, file, now)) {
        await fsp.rm(file, { force: true, recursive: true });
        removed++;
      }
    }
    return removed;
  }
}

/** Whether a temporary file belongs to no running process (see the naming in `createTemp`). */
async function isLeftOver(name: string, file: string, now: number): Promise<boolean> {
  const match = /^(.+)-(\d+)-([0-9a-f]{12})-[0-9a-f]+$/.exec(name);
  if (match && match[1] === HOST) {
    const pid = Number(match[2]);
    if (pid === process.pid) return match[3] !== INSTANCE;
    return !isAlive(pid);
  }
  // Another host's (a shared volume) or an unknown name: this host cannot tell whether its writer runs.
  const stat = await fsp.stat(file).catch(() => null);
  return stat !== null && now - stat.mtimeMs > FOREIGN_TEMP_MAX_AGE_MS;
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
