import crypto from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Writable } from 'node:stream';

/** This process, told apart from an earlier one that had the same pid (containers restart as pid 1). */
const INSTANCE = crypto.randomBytes(6).toString('hex');
const HOST = os.hostname().replace(/[^A-Za-z0-9.]/g, '_');
/** A staged file of another host, or of a name we do not know, is removed once it is this old. */
const FOREIGN_TEMP_MAX_AGE_MS = 24 * 3_600_000;

/**
 * What a staged file's stream takes before it asks its writer to wait. With the default (16 KiB),
 * every 64 KiB piece of a request body waited for its own write to the disk before the next was
 * read from the socket; with 1 MiB the disk's writes overlap the receiving (a 50 MB upload to the
 * disk store took about a fifth less of the server's CPU: bench/README.md, "Stored files").
 * Bounded: at most this much (plus one piece) per upload waits in memory, and a process takes at
 * most 32 uploads at once (docs/decisions.md, "Uploads at once").
 */
const WRITE_BUFFER_BYTES = 1024 * 1024;

/** A file being received on local disk, before it is read, accepted and put into the blob store. */
export interface TempBlob {
  /** On local disk, so that it can be analysed. */
  path: string;
  stream(): Writable;
  /** Removes the staged file; safe to call twice or after the store took it. */
  discard(): Promise<void>;
}

/**
 * Local staging of uploads, whatever the blob store: `<DATA_DIR>/tmp/`, files named after the
 * process that writes them (`<host>-<pid>-<instance>-<random>`), so that a sweep can tell the
 * leftovers of a crashed process from the uploads of a live one. Under the same root as the disk
 * store's blobs, so that the disk store moves a file into place with an atomic rename.
 */
export class Staging {
  constructor(readonly dir: string) {
    fs.mkdirSync(dir, { recursive: true });
  }

  async createTemp(): Promise<TempBlob> {
    const file = path.join(this.dir, `${HOST}-${process.pid}-${INSTANCE}-${crypto.randomBytes(12).toString('hex')}`);
    let discarded = false;
    let writer: fs.WriteStream | null = null;
    return {
      path: file,
      stream: () => {
        writer = fs.createWriteStream(file, { flags: 'wx', highWaterMark: WRITE_BUFFER_BYTES });
        return writer;
      },
      discard: async () => {
        if (discarded) return;
        discarded = true;
        // The stream opens its file asynchronously, and a failed pipeline destroys it without
        // waiting for it to close: removing the file before then let a pending open create it
        // afterwards, a staged file that no sweep of this process would remove.
        if (writer) await closed(writer);
        await fsp.rm(file, { force: true });
      },
    };
  }

  /** Removes staged files left by processes that no longer run; returns how many. */
  async sweep(now = Date.now()): Promise<number> {
    let removed = 0;
    for (const name of await fsp.readdir(this.dir).catch(() => [])) {
      const file = path.join(this.dir, name);
      if (await isLeftOver(name, file, now)) {
        await fsp.rm(file, { force: true, recursive: true });
        removed++;
      }
    }
    return removed;
  }
}

/** Resolves once `stream` has closed its file (destroying it first if it is still open). */
function closed(stream: fs.WriteStream): Promise<void> {
  if (stream.closed) return Promise.resolve();
  return new Promise((resolve) => {
    // The file is being thrown away: an error of its open, write or close changes nothing.
    stream.on('error', () => {});
    stream.once('close', () => resolve());
    if (!stream.destroyed) stream.destroy();
  });
}

/** Whether a staged file belongs to no running process (see the naming in `createTemp`). */
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

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
