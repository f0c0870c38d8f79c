import crypto from 'node:crypto';
import { Transform } from 'node:stream';
import { Worker } from 'node:worker_threads';

/**
 * SHA-256 of the files streaming through the service, computed in a worker thread, so that the
 * event loop only copies the bytes: hashing a 50 MB upload took the main thread 50–60 ms, the
 * largest share of what an upload to the disk store cost more than the bare route; copying it
 * takes 10–15 (bench/README.md, "Stored files").
 *
 * One thread per process (started by `formsign serve`, else by the first file larger than a
 * slot; about 10 MB of memory); it keeps the process alive only while a stream is open in it, and
 * holds one hash per stream. A stream copies what passes into `SLOTS` slots of `SLOT_BYTES` of
 * memory shared with the thread, hands each full slot over and waits (backpressure) when all are
 * away until the thread hands one back: a stream holds `SLOTS × SLOT_BYTES` (1 MiB) whatever the
 * file's size. A file of one slot or less is hashed here, from the chunks it held: it allocates
 * no slots and sends nothing.
 */
const SLOT_BYTES = 256 * 1024;
const SLOTS = 4;

/**
 * The thread's code: plain JavaScript, so that it loads the same under tsx and compiled. A stream
 * opens with its shared memory; each update names a slot the stream has filled and will not touch
 * until the thread acknowledges it. A message for a stream it does not hold (dropped) is ignored.
 */
const THREAD_CODE = `
const { parentPort } = require('node:worker_threads');
const crypto = require('node:crypto');
const streams = new Map();
parentPort.on('message', (m) => {
  if (m.type === 'open') {
    streams.set(m.id, { memory: m.memory, hash: crypto.createHash('sha256') });
  } else if (m.type === 'update') {
    const stream = streams.get(m.id);
    if (!stream) return;
    stream.hash.update(new Uint8Array(stream.memory, m.slot * ${SLOT_BYTES}, m.length));
    parentPort.postMessage({ type: 'ack', id: m.id, slot: m.slot });
  } else if (m.type === 'digest') {
    const stream = streams.get(m.id);
    if (!stream) return;
    streams.delete(m.id);
    parentPort.postMessage({ type: 'digest', id: m.id, hex: stream.hash.digest('hex') });
  } else if (m.type === 'drop') {
    streams.delete(m.id);
  }
});
`;

type FromThread = { type: 'ack'; id: number; slot: number } | { type: 'digest'; id: number; hex: string };

interface Listener {
  ack(slot: number): void;
  digest(hex: string): void;
  fail(error: Error): void;
}

/** The process's hashing thread and the streams it is hashing. */
class HashThread {
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly listeners = new Map<number, Listener>();

  /** A new stream's id; `listener` hears its acknowledgements, its digest, or the thread's end. */
  open(listener: Listener, memory: SharedArrayBuffer): number {
    const id = this.nextId++;
    this.listeners.set(id, listener);
    this.worker?.ref();
    this.thread().postMessage({ type: 'open', id, memory });
    return id;
  }

  close(id: number, drop: boolean): void {
    if (this.listeners.delete(id) && drop) this.worker?.postMessage({ type: 'drop', id });
    if (this.listeners.size === 0) this.worker?.unref();
  }

  update(id: number, slot: number, length: number): void {
    this.thread().postMessage({ type: 'update', id, slot, length });
  }

  digest(id: number): void {
    this.thread().postMessage({ type: 'digest', id });
  }

  /** How many streams are open in the thread (hashing, or their digest asked for). */
  get streams(): number {
    return this.listeners.size;
  }

  /** Ends the thread: the streams open in it fail. */
  async stop(): Promise<void> {
    await this.worker?.terminate();
  }

  thread(): Worker {
    if (this.worker) return this.worker;
    // No flags of this process (a loader, `--input-type`): the code is a plain CommonJS script.
    const worker = new Worker(THREAD_CODE, { eval: true, name: 'formsign sha256', execArgv: [] });
    worker.on('message', (message: FromThread) => {
      const listener = this.listeners.get(message.id);
      if (!listener) return; // a stream destroyed meanwhile
      if (message.type === 'ack') listener.ack(message.slot);
      else listener.digest(message.hex);
    });
    const ended = (error: Error) => {
      if (this.worker !== worker) return;
      this.worker = null;
      // Every stream it was hashing has lost its state: each fails (the next file starts a new thread).
      const listeners = [...this.listeners.values()];
      this.listeners.clear();
      for (const listener of listeners) listener.fail(error);
    };
    worker.on('error', (error) => ended(new Error(`the hashing thread failed: ${error.message}`)));
    worker.on('exit', (code) => ended(new Error(`the hashing thread stopped (exit code ${code})`)));
    // The thread keeps the process alive only while a stream waits on it (set after the
    // listeners: adding a 'message' listener refs the worker again).
    if (this.listeners.size === 0) worker.unref();
    this.worker = worker;
    return worker;
  }
}

let shared: HashThread | null = null;

/**
 * Starts the hashing thread now rather than at the first large file (`formsign serve`): it is part
 * of the process, about 10 MB of memory (its own V8 heap and Node's start-up) that does not grow
 * with the files, and the first upload does not wait for it to start.
 */
export function startHashThread(): void {
  shared ??= new HashThread();
  shared.thread();
}

/** How many streams are open in the hashing thread: 0 once every stream has its digest or was destroyed. */
export function hashThreadStreams(): number {
  return shared?.streams ?? 0;
}

/** Ends the hashing thread (as a crash would: the streams open in it fail); the next file starts another. */
export async function stopHashThread(): Promise<void> {
  await shared?.stop();
}

/**
 * A pass-through stream that hashes (SHA-256, in the hashing thread) and counts what passes.
 * The digest is asked for when the stream ends; `digest()` answers it (and rejects if the stream
 * was destroyed before its end, or the thread failed). Destroyed before its end, the stream's hash
 * is dropped: nothing is left in the thread whatever the caller does afterwards.
 */
export function sha256Counter(): { stream: Transform; digest(): Promise<string>; bytes(): number } {
  let bytes = 0;
  let id = 0; // open in the thread once non-zero
  let failed: Error | null = null;
  const held: Buffer[] = []; // the first chunks, until they are more than a slot
  let heldBytes = 0;
  let memory: Buffer | null = null; // SLOTS slots of SLOT_BYTES, shared with the thread
  let free: number[] = [];
  let slot = -1; // the slot being filled
  let filled = 0;
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
    if (error) settle!.reject(error);
    else settle!.resolve(hex!);
  };
  const wake = () => {
    const next = resume;
    resume = null;
    next?.();
  };

  const listener: Listener = {
    ack(done) {
      free.push(done);
      wake();
    },
    digest: (hex) => finish(null, hex),
    fail(error) {
      failed = error;
      wake();
      finish(error);
    },
  };

  /** Hands the slot being filled to the thread (opening this stream there at its first). */
  const send = () => {
    if (slot < 0 || filled === 0) return;
    shared ??= new HashThread();
    if (id === 0) id = shared.open(listener, memory!.buffer as SharedArrayBuffer);
    shared.update(id, slot, filled);
    slot = -1;
    filled = 0;
  };

  const stream = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      bytes += chunk.length;
      if (!memory) {
        // Up to a slot's worth is only held (a small file never allocates slots nor meets the thread).
        if (heldBytes + chunk.length <= SLOT_BYTES) {
          held.push(chunk);
          heldBytes += chunk.length;
          return callback(null, chunk);
        }
        memory = Buffer.from(new SharedArrayBuffer(SLOTS * SLOT_BYTES));
        free = Array.from({ length: SLOTS - 1 }, (_, i) => SLOTS - 1 - i);
        slot = 0;
        for (const piece of held) filled += piece.copy(memory, filled);
        held.length = 0;
      }
      let at = 0;
      // Copies the chunk into free slots, waiting for the thread to hand one back when none is.
      const proceed = () => {
        if (failed) return callback(failed);
        while (at < chunk.length) {
          if (slot < 0) {
            const next = free.pop();
            if (next === undefined) {
              resume = proceed;
              return;
            }
            slot = next;
          }
          const n = Math.min(chunk.length - at, SLOT_BYTES - filled);
          chunk.copy(memory!, slot * SLOT_BYTES + filled, at, at + n);
          filled += n;
          at += n;
          if (filled === SLOT_BYTES) send();
        }
        callback(null, chunk);
      };
      proceed();
    },
    flush(callback) {
      if (failed) return callback(failed);
      ended = true;
      if (id === 0) {
        // A slot's worth or less, held: hashed here.
        const hash = crypto.createHash('sha256');
        for (const piece of held) hash.update(piece);
        held.length = 0;
        finish(null, hash.digest('hex'));
      } else {
        send();
        shared!.digest(id);
      }
      callback();
    },
    destroy(error, callback) {
      if (!ended) finish(error ?? new Error('the stream was destroyed before its end'));
      callback(error);
    },
  });

  return { stream, bytes: () => bytes, digest: () => digest };
}
