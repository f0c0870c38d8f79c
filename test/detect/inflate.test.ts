/**
 * The detection process's `DecompressionStream` (src/detect/inflate.ts): what pdf.js reads through
 * it must be what it reads through Node's, errors included, since pdf.js falls back to its own
 * inflater on an error.
 */
import assert from 'node:assert/strict';
import { fork, type ForkOptions } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, it } from 'node:test';
import zlib from 'node:zlib';
import { InflateOnThisThread, inflateOnThisThread } from '../../src/detect/inflate.js';

const NodeDecompressionStream = globalThis.DecompressionStream;

/** Reads a stream as pdf.js's FlateStream does: one write, then close; every chunk read. */
async function inflate(stream: { readable: ReadableStream<Uint8Array>; writable: WritableStream<BufferSource> }, ...writes: Array<BufferSource | Buffer>) {
  const writer = stream.writable.getWriter();
  await writer.ready;
  const closed = (async () => {
    for (const chunk of writes) await writer.write(chunk as BufferSource);
    await writer.ready;
    await writer.close();
  })().then(
    () => 'closed',
    (error: Error) => `close failed: ${error.message}`,
  );
  const chunks: Buffer[] = [];
  let error = '';
  try {
    for await (const chunk of stream.readable) chunks.push(Buffer.from(chunk));
  } catch (e) {
    error = `${(e as Error).constructor.name}: ${(e as Error).message}`;
  }
  return { bytes: Buffer.concat(chunks), chunks: chunks.length, error, closed: await closed };
}

const text = Buffer.from(Array.from({ length: 20_000 }, (_, i) => `line ${i} of a content stream\n`).join(''));
const good = zlib.deflateSync(text);
const cases: Array<[string, Buffer[]]> = [
  ['a stream of 600 kB', [good]],
  ['the same in three writes', [good.subarray(0, 10), good.subarray(10, 5000), good.subarray(5000)]],
  ['an empty stream', [zlib.deflateSync(Buffer.alloc(0))]],
  ['nothing at all', [Buffer.alloc(0)]],
  ['truncated', [good.subarray(0, good.length - 100)]],
  ['its checksum missing', [good.subarray(0, good.length - 4)]],
  ['its checksum wrong', [Buffer.concat([good.subarray(0, good.length - 1), Buffer.from([good[good.length - 1]! ^ 1])])]],
  ['no zlib header (raw deflate)', [zlib.deflateRawSync(text)]],
  ['not compressed', [Buffer.from('BT /F1 12 Tf (Hello) Tj ET')]],
];

describe('streams inflated on the detection thread (InflateOnThisThread)', () => {
  for (const [name, writes] of cases) {
    it(`gives what Node's DecompressionStream gives: ${name}`, async () => {
      const theirs = await inflate(new NodeDecompressionStream('deflate'), ...writes);
      const ours = await inflate(new InflateOnThisThread('deflate'), ...writes);
      // Node's error is a plain Error with zlib's words; the close fails with it too.
      assert.equal(ours.error, theirs.error);
      assert.equal(ours.closed, theirs.closed);
      if (ours.error) {
        // Node's may have given the bytes it could inflate before the error (pdf.js drops them); this one gives none.
        assert.equal(ours.chunks, 0);
      } else {
        assert.equal(ours.bytes.equals(theirs.bytes), true, `${ours.bytes.length} bytes against ${theirs.bytes.length}`);
        assert.equal(ours.chunks > 0, theirs.chunks > 0, 'no chunk at all for an empty output, as Node');
      }
    });
  }

  it("ignores bytes after the stream's end, as Node 20's stream and pdf.js's own inflater (its fallback where a later Node refuses them) do", async () => {
    const ours = await inflate(new InflateOnThisThread('deflate'), Buffer.concat([good, Buffer.from('junk after the end')]));
    assert.equal(ours.error, '');
    assert.equal(ours.bytes.equals(text), true);
    const theirs = await inflate(new NodeDecompressionStream('deflate'), Buffer.concat([good, Buffer.from('junk after the end')]));
    assert.ok(theirs.error ? /junk/i.test(theirs.error) : theirs.bytes.equals(text), JSON.stringify(theirs.error));
  });

  it('inflates what was written, not what the writer changed in its buffer afterwards', async () => {
    const buffer = Buffer.from(good);
    const stream = new InflateOnThisThread('deflate');
    const chunks: Uint8Array[] = [];
    const read = (async () => {
      for await (const chunk of stream.readable) chunks.push(chunk);
    })();
    const writer = stream.writable.getWriter();
    // The write is done (its promise resolved): the writer may use its buffer again.
    await writer.write(buffer);
    buffer.fill(0);
    await writer.close();
    await read;
    assert.equal(Buffer.concat(chunks).equals(text), true);
  });

  it('takes an ArrayBuffer or any view of one, and refuses anything else with a TypeError', async () => {
    const bytes = new Uint8Array(good);
    for (const chunk of [bytes.buffer, new DataView(bytes.buffer), new Uint16Array(bytes.buffer, 0, bytes.length >> 1)]) {
      const rest = bytes.subarray(chunk instanceof Uint16Array ? (bytes.length >> 1) * 2 : bytes.length);
      const { bytes: out, error } = await inflate(new InflateOnThisThread('deflate'), chunk, rest);
      assert.equal(error, '');
      assert.equal(out.equals(text), true);
    }
    const { error } = await inflate(new InflateOnThisThread('deflate'), 'a string' as unknown as BufferSource);
    assert.match(error, /^TypeError: The chunk must be an ArrayBuffer or a view of one/);
  });

  it("leaves every other format to Node's own stream, and refuses an unknown one as Node does", async () => {
    const gzip = new InflateOnThisThread('gzip');
    assert.ok(gzip instanceof NodeDecompressionStream);
    assert.equal((await inflate(gzip, zlib.gzipSync(text))).bytes.equals(text), true);
    assert.ok(new InflateOnThisThread('deflate-raw') instanceof NodeDecompressionStream);
    assert.throws(() => new InflateOnThisThread('zip' as CompressionFormat), (e: Error & { code?: string }) => e instanceof TypeError && e.code === 'ERR_INVALID_ARG_VALUE');
  });

  it("is made the global DecompressionStream, and what was there before is put back", () => {
    const before = Object.getOwnPropertyDescriptor(globalThis, 'DecompressionStream');
    const restore = inflateOnThisThread();
    assert.equal(globalThis.DecompressionStream, InflateOnThisThread);
    assert.equal(Object.getOwnPropertyDescriptor(globalThis, 'DecompressionStream')!.enumerable, false);
    // Node's again, and back to ours: each call puts back what it found.
    const restoreOurs = inflateOnThisThread(false);
    assert.equal(globalThis.DecompressionStream, NodeDecompressionStream);
    restoreOurs();
    assert.equal(globalThis.DecompressionStream, InflateOnThisThread);
    restore();
    assert.deepEqual(Object.getOwnPropertyDescriptor(globalThis, 'DecompressionStream'), before);
    assert.equal(globalThis.DecompressionStream, NodeDecompressionStream);
  });

  it('is what the detection process (src/detect/thread.ts) has as its DecompressionStream once it is ready', async () => {
    const probe = path.resolve(import.meta.dirname, '../helpers/decompression-probe.ts');
    const child = fork(path.resolve(import.meta.dirname, '../../src/detect/thread.ts'), [], { execArgv: ['--import', 'tsx', '--import', pathToFileURL(probe).href], stdio: 'ignore' } as ForkOptions);
    try {
      const [message] = (await once(child, 'message')) as [{ type: string; decompressionStream?: string }];
      assert.deepEqual(message, { type: 'probe', decompressionStream: 'InflateOnThisThread' });
    } finally {
      child.kill();
    }
  });

  it("lets pdf.js read corpus forms, as they are and with their widgets stripped, into the same detection as through Node's, and pdf.js does inflate through it", async () => {
    const { CORPUS, corpusFiles } = await import('../helpers/files.js');
    const { stripWidgets } = await import('../../bench/corpus.js');
    const { openForDetection } = await import('../../src/detect/open.js');
    const { detectFields } = await import('../../src/detect/pipeline.js');
    let made = 0;
    class Counted extends InflateOnThisThread {
      constructor(format: CompressionFormat) {
        super(format);
        made++;
      }
    }
    const detect = async (bytes: Uint8Array, ours: boolean) => {
      const restore = inflateOnThisThread(false);
      if (ours) Object.defineProperty(globalThis, 'DecompressionStream', { value: Counted, writable: true, configurable: true, enumerable: false });
      const task = openForDetection(bytes.slice());
      try {
        const { fields, stats } = await detectFields(await task.promise);
        return JSON.stringify({ fields, warnings: stats.warnings, found: stats.found });
      } finally {
        await task.destroy();
        restore();
      }
    };
    let layout = 0;
    const manifest = JSON.parse(fs.readFileSync(path.join(CORPUS, 'manifest.json'), 'utf8')) as Array<{ file: string; encrypted: boolean | string }>;
    const plain = new Set(manifest.filter((e) => e.encrypted === false).map((e) => path.basename(e.file, '.pdf')));
    for (const form of corpusFiles().filter((f) => plain.has(f.name)).slice(0, 4)) {
      const original = new Uint8Array(fs.readFileSync(form.file));
      for (const bytes of [original, (await stripWidgets(original, false)).bytes]) {
        const before = made;
        const ours = await detect(bytes, true);
        assert.equal(ours, await detect(bytes, false), form.name);
        assert.ok(made > before, `${form.name}: pdf.js inflated its streams through InflateOnThisThread`);
        layout += (JSON.parse(ours) as { fields: Array<{ source: string }> }).fields.filter((f) => f.source === 'layout').length;
      }
    }
    assert.ok(layout > 0, 'the stripped forms went through the layout detector');
  });
});
