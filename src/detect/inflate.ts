/**
 * pdf.js inflates every Flate stream it reads (a page's content, a form XObject, an embedded font)
 * through the global `DecompressionStream`. Node's runs the inflation on its thread pool, and pdf.js
 * awaits each stream, so the thread that reads the page waits idle for every one of them: 5 to 12 %
 * of the detection's time over ../shared/corpus, most of it spent waiting on small streams
 * (bench/README.md, issue 15, "Streams inflated on the detection's own thread").
 *
 * The detection process (thread.ts) replaces the global with `InflateOnThisThread`, which inflates
 * a "deflate" stream at once, on its own thread, with zlib's `inflateSync`: the same zlib, so the
 * same bytes and the same errors. The process reads one document, and its parent bounds its time
 * and memory from outside (runner.ts), so a long inflation there holds up nothing else. Nothing
 * else runs in that process; the API process and the PDF helper keep Node's.
 */
import zlib from 'node:zlib';

/** Node's `DecompressionStream`, and the global as Node defines it once read, taken when this module runs. */
const NodeDecompressionStream = globalThis.DecompressionStream;
const NODE_GLOBAL = Object.getOwnPropertyDescriptor(globalThis, 'DecompressionStream');

/**
 * A `DecompressionStream` whose "deflate" format inflates on the calling thread, all at once when
 * its writable side closes (pdf.js writes a stream's bytes in one write, closes, and reads every
 * chunk): nothing comes out before the close. The output is zlib's, as Node's own: a zlib stream
 * inflated whole, and for truncated or corrupt data the same `Error` ("unexpected end of file",
 * "incorrect header check", "incorrect data check"), on the readable side and on the writer's
 * `close`. Bytes after the stream's end are ignored, as Node 20's stream and pdf.js's own inflater
 * ignore them (later Node versions refuse them, and pdf.js then inflates with its own: the same
 * bytes). A chunk that is not an `ArrayBuffer` or a view of one is a TypeError (the Compression
 * Streams standard's rule; Node 20's own would encode a string). The chunks are copied as they are
 * written, so a stream holds its compressed bytes once more until its close. Every other format is
 * Node's own stream.
 */
export class InflateOnThisThread {
  // Assigned for "deflate"; for another format the constructor returns Node's stream instead.
  readonly readable!: ReadableStream<Uint8Array>;
  readonly writable!: WritableStream<BufferSource>;

  constructor(format: CompressionFormat) {
    if (format !== 'deflate') return new NodeDecompressionStream(format) as unknown as InflateOnThisThread;
    const chunks: Buffer[] = [];
    const stream = new TransformStream<BufferSource, Uint8Array>({
      transform(chunk) {
        if (chunk instanceof ArrayBuffer) chunks.push(Buffer.from(new Uint8Array(chunk)));
        else if (ArrayBuffer.isView(chunk)) chunks.push(Buffer.from(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength)));
        else throw new TypeError('The chunk must be an ArrayBuffer or a view of one');
      },
      flush(controller) {
        const inflated = zlib.inflateSync(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
        chunks.length = 0;
        // Node's stream gives no chunk for an empty output either.
        if (inflated.length > 0) controller.enqueue(inflated);
      },
    });
    this.readable = stream.readable;
    this.writable = stream.writable;
  }
}

/**
 * Makes `InflateOnThisThread` the global `DecompressionStream` (pdf.js looks it up at each stream),
 * or with `false` Node's; returns a function that puts back what was there before the call.
 */
export function inflateOnThisThread(onThisThread = true): () => void {
  const before = Object.getOwnPropertyDescriptor(globalThis, 'DecompressionStream');
  if (onThisThread) Object.defineProperty(globalThis, 'DecompressionStream', { value: InflateOnThisThread, writable: true, enumerable: false, configurable: true });
  else if (NODE_GLOBAL) Object.defineProperty(globalThis, 'DecompressionStream', NODE_GLOBAL);
  return () => {
    if (before) Object.defineProperty(globalThis, 'DecompressionStream', before);
    else delete (globalThis as { DecompressionStream?: unknown }).DecompressionStream;
  };
}
