import crypto from 'node:crypto';
import { Transform } from 'node:stream';
import { Worker } from 'node:worker_threads';

/**
 * SHA-256 of the files streaming through the service, computed in a worker thread, so that the
 * event loop only copies the bytes: hashing a 50 MB upload took the main thread 40–60 ms, the
 * largest share of what an upload to the disk store cost more than the bare route; the copy to
 * the thread and the messages take about a third of that (`npm run bench:hashing`).
 *
 * One thread per process (started by `formsign serve`, else by the first file larger than a
 * slot; about 10 MB of memory); it keeps the process alive only while a stream is open in it, and
 * holds one hash per stream. A stream copies what passes into at most `SLOTS` slots of
 * `SLOT_BYTES`, hands each full slot over (transferred, not copied) and waits (backpressure)
 * when all are away until the thread hands one back: a stream holds `SLOTS × SLOT_BYTES` (1 MiB),
 * plus the chunk it is copying, whatever the file's size. A file of one slot or less is hashed
 * here, from the chunks it held: it allocates no slots and sends nothing.
 */
const SLOT_BYTES = 256 * 1024;
const SLOTS = 4;

/**
 * The thread's code: plain JavaScript, so that it loads the same under tsx and compiled. Every
 * batch goes back to the process with its acknowledgement, even one of a stream it no longer
 * holds (dropped), so that the thread keeps no memory of a stream once it is done: an
 * `ArrayBuffer` handed to it would otherwise wait for its own garbage collection, which an
 * almost idle heap rarely runs (a review found 100 MB held after 100 uploads with shared slots).
 */
const THREAD_CODE = `
const { parentPort } = require('node:worker_threads');
const crypto = require('node:crypto');
const hashes = new Map();
parentPort.on('message', (m) => {
  if (m.type === 'open') {
    hashes.set(m.id, crypto.createHash('sha256'));
  } else if (m.type === 'update') {
    const hash = hashes.get(m.id);
    if (hash) hash.update(new Uint8Array(m.buffer, 0, m.length));
    parentPort.postMessage({ type: 'ack', id: m.id, buffer: m.buffer }, [m.buffer]);
  } else if (m.type === 'digest') {
    const hash = hashes.get(m.id);
    if (!hash) return;
    hashes.delete(m.id);
    parentPort.postMessage({ type: 'digest', id: m.id, hex: hash.digest('hex') });
  } else if (m.type === 'drop') {
    hashes.delete(m.id);
  } else if (m.type === 'count') {
    parentPort.postMessage({ type: 'count', id: 0, count: hashes.size });
  }
});
`;

type FromThread =
  | { type: 'ack'; id: number; buffer: ArrayBuffer }
  | { type: 'digest'; id: number; hex: string }
  | { type: 'count'; id: 0; count: number };

/** The hashing thread failed, stopped or could not start: a fault of this process, not of the file. */
export class HashThreadFailed extends Error {}

interface Listener {
  ack(buffer: ArrayBuffer): void;
  digest(hex: string): void;
  fail(error: HashThreadFailed): void;
}

/** The process's hashing thread and the streams it is hashing. */
class HashThread {
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly listeners = new Map<number, Listener>();
  private readonly counts: Array<{ resolve(count: number): void; reject(error: Error): void }> = [];

  /** A new stream's id; `listener` hears its acknowledgements, its digest, or the thread's end. */
  open(listener: Listener): number {
    const worker = this.thread(); // first: it may throw (no thread could start)
    const id = this.nextId++;
    this.listeners.set(id, listener);
    worker.ref();
    worker.postMessage({ type: 'open', id });
    return id;
  }

  close(id: number, drop: boolean): void {
    if (this.listeners.delete(id) && drop) this.worker?.postMessage({ type: 'drop', id });
    if (this.listeners.size === 0 && this.counts.length === 0) this.worker?.unref();
  }

  update(id: number, buffer: ArrayBuffer, length: number): void {
    this.thread().postMessage({ type: 'update', id, buffer, length }, [buffer]);
  }

  digest(id: number): void {
    this.thread().postMessage({ type: 'digest', id });
  }

  /** How many streams are open here (hashing, or their digest asked for). */
  get streams(): number {
    return this.listeners.size;
  }

  /** How many hashes the thread itself holds (none without a thread); rejects if the thread dies first. */
  held(): Promise<number> {
    const worker = this.worker;
    if (!worker) return Promise.resolve(0);
    worker.ref();
    return new Promise((resolve, reject) => {
      this.counts.push({ resolve, reject });
      worker.postMessage({ type: 'count' });
    });
  }

  /** Ends the thread: the streams open in it fail. */
  async stop(): Promise<void> {
    this.worker?.ref(); // an idle thread is unref'd: the process must wait for its end
    await this.worker?.terminate();
  }

  thread(): Worker {
    if (this.worker) return this.worker;
    let worker: Worker;
    try {
      // No flags of this process (a loader, `--input-type`): the code is a plain CommonJS script.
      worker = new Worker(THREAD_CODE, { eval: true, name: 'formsign sha256', execArgv: [] });
    } catch (error) {
      throw new HashThreadFailed(`the hashing thread could not start: ${(error as Error).message}`);
    }
    worker.on('message', (message: FromThread) => {
      if (message.type === 'count') {
        this.counts.shift()?.resolve(message.count);
        if (this.listeners.size === 0 && this.counts.length === 0) worker.unref();
        return;
      }
      const listener = this.listeners.get(message.id);
      if (!listener) return; // a stream destroyed meanwhile: its batch is dropped here
      if (message.type === 'ack') listener.ack(message.buffer);
      else listener.digest(message.hex);
    });
    const ended = (error: HashThreadFailed) => {
      if (this.worker !== worker) return;
      this.worker = null;
      // Every stream it was hashing has lost its state: each fails (the next file starts a new thread).
      const listeners = [...this.listeners.values()];
      this.listeners.clear();
      for (const listener of listeners) listener.fail(error);
      for (const answer of this.counts.splice(0)) answer.reject(error);
    };
    worker.on('error', (error) => ended(new HashThreadFailed(`the hashing thread failed: ${error.message}`)));
    worker.on('exit', (code) => ended(new HashThreadFailed(`the hashing thread stopped (exit code ${code})`)));
    // The thread keeps the process alive only while a stream waits on it (set after the
    // listeners: adding a 'message' listener refs the worker again).
    worker.unref();
    this.worker = worker;
    return worker;
  }
}

let shared: HashThread | null = null;
const hashThread = () => (shared ??= new HashThread());

/** Batches of finished streams, for the next ones (a new one is zeroed, and left to the collector): at most 16, 4 MiB. */
const POOL_MAX = 16;
const pool: ArrayBuffer[] = [];

/**
 * Starts the hashing thread now rather than at the first large file (`formsign serve`): it is part
 * of the process, about 10 MB of memory (its own V8 heap and Node's start-up) that does not grow
 * with the files, and the first upload does not wait for it to start.
 */
export function startHashThread(): void {
  hashThread().thread();
}

/** How many streams are open in the hashing thread: 0 once every stream has its digest or was destroyed. */
export function hashThreadStreams(): number {
  return shared?.streams ?? 0;
}

/** How many hashes the hashing thread itself holds (asked of it). */
export function hashThreadHeld(): Promise<number> {
  return hashThread().held();
}

/** Ends the hashing thread (as a crash would: the streams open in it fail); the next file starts another. */
export async function stopHashThread(): Promise<void> {
  await shared?.stop();
}

/**
 * A pass-through stream that hashes (SHA-256, in the hashing thread) and counts what passes.
 * The digest is asked for when the stream ends; `digest()` answers it (and rejects if the stream
 * was destroyed before its end, or the thread failed: `HashThreadFailed`). Destroyed before its
 * end, the stream's hash is dropped: nothing is left in the thread whatever the caller does
 * afterwards.
 *
 * The chunks are passed on at once; the first ones (a slot's worth) are kept and hashed or
 * copied later, which relies on the source not changing the bytes of a chunk it has pushed, as
 * the staged file's write stream does too. Sockets and `fs` read streams push fresh buffers;
 * busboy pushes some bytes as a view of a buffer it reuses (its look-behind across socket
 * chunks), but that buffer only ever holds a prefix of the boundary at the same offsets, so the
 * bytes of such a view never change.
 */
export function sha256Counter(): { stream: Transform; digest(): Promise<string>; bytes(): number } {
  let bytes = 0;
  let id = 0; // open in the thread once non-zero
  let failed: Error | null = null;
  const held: Buffer[] = []; // the first chunks, until they are more than a slot
  let heldBytes = 0;
  let batch: Buffer | null = null; // the slot being filled
  let filled = 0;
  let made = 0; // slots allocated, at most SLOTS: away in the thread, spare, or `batch`
  const spare: ArrayBuffer[] = [];
  let resume: (() => void) | null = null;
  let settle: { resolve(hex: string): void; reject(error: Error): void } | null = null;
  const digest = new Promise<string>((resolve, reject) => {
    settle = { resolve, reject };
  });
  digest.catch(() => {}); // the caller may never ask (a refused upload)
  let ended = false; // flush ran: the digest is asked for
  let settled = false;
  const finish = (error: Error | null, hex?: string) => {
    if (settled) return;
    settled = true;
    if (id !== 0) shared?.close(id, error !== null);
    // The batches back from the thread are this stream's no more (one still away is dropped when it returns).
    while (spare.length > 0 && pool.length < POOL_MAX) pool.push(spare.pop()!);
    spare.length = 0;
    if (error) settle!.reject(error);
    else settle!.resolve(hex!);
  };
  const wake = () => {
    const next = resume;
    resume = null;
    next?.();
  };

  const listener: Listener = {
    ack(buffer) {
      spare.push(buffer);
      wake();
    },
    digest: (hex) => finish(null, hex),
    fail(error) {
      failed = error;
      wake();
      finish(error);
    },
  };

  /** A free slot, or null while all are away. */
  const take = (): Buffer | null => {
    const buffer = spare.pop() ?? (made < SLOTS ? (made++, pool.pop() ?? new ArrayBuffer(SLOT_BYTES)) : null);
    return buffer ? Buffer.from(buffer) : null;
  };
  /** Hands the slot being filled to the thread (opening this stream there at its first). */
  const send = () => {
    if (!batch || filled === 0) return;
    const thread = hashThread();
    if (id === 0) id = thread.open(listener);
    thread.update(id, batch.buffer as ArrayBuffer, filled);
    batch = null;
    filled = 0;
  };
  /** An error met while handing a batch over (the thread could not start: `HashThreadFailed`) as the stream's own. */
  const fault = (error: unknown): Error => {
    failed = error instanceof Error ? error : new Error(String(error));
    finish(failed);
    return failed;
  };

  const stream = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      bytes += chunk.length;
      let at = 0;
      if (made === 0) {
        // Up to a slot's worth is only held (a small file never allocates slots nor meets the thread).
        if (heldBytes + chunk.length <= SLOT_BYTES) {
          held.push(chunk);
          heldBytes += chunk.length;
          return callback(null, chunk);
        }
        batch = take();
        for (const piece of held) filled += piece.copy(batch!, filled);
        held.length = 0;
      }
      // Copies the chunk into slots, waiting for the thread to hand one back when all are away.
      const proceed = () => {
        if (failed) return callback(failed);
        try {
          while (at < chunk.length) {
            batch ??= take();
            if (!batch) {
              resume = proceed;
              return;
            }
            const n = chunk.copy(batch, filled, at, Math.min(chunk.length, at + SLOT_BYTES - filled));
            filled += n;
            at += n;
            if (filled === SLOT_BYTES) send();
          }
        } catch (error) {
          return callback(fault(error));
        }
        callback(null, chunk);
      };
      proceed();
    },
    flush(callback) {
      if (failed) return callback(failed);
      if (id === 0 && made === 0) {
        // A slot's worth or less, held: hashed here.
        const hash = crypto.createHash('sha256');
        for (const piece of held) hash.update(piece);
        held.length = 0;
        finish(null, hash.digest('hex'));
      } else {
        try {
          send();
          hashThread().digest(id);
        } catch (error) {
          return callback(fault(error));
        }
      }
      ended = true;
      callback();
    },
    destroy(error, callback) {
      if (!ended) finish(error ?? new Error('the stream was destroyed before its end'));
      callback(error);
    },
  });

  return { stream, bytes: () => bytes, digest: () => digest };
}

/** The SHA-256 (hex) of a buffer, hashed in the hashing thread when it is larger than a slot. */
export function sha256Of(data: Buffer): Promise<string> {
  const counter = sha256Counter();
  counter.stream.resume(); // what passes through is not wanted
  counter.stream.end(data);
  return counter.digest();
}
