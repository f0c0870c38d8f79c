import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, it } from 'node:test';
import { hashThreadHeld, hashThreadStreams, HashThreadFailed, sha256Counter, stopHashThread } from '../../src/blobs/sha256.js';

const SLOT = 256 * 1024; // SLOT_BYTES of src/blobs/sha256.ts

const sha256 = (data: Buffer) => crypto.createHash('sha256').update(data).digest('hex');

/** `data` in pieces of `piece` bytes. */
function pieces(data: Buffer, piece: number): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < data.length; at += piece) out.push(data.subarray(at, at + piece));
  return out;
}

/** A sink that takes each chunk after `delayMs` and keeps a copy of what it was given. */
function sink(delayMs = 0): { stream: Writable; received(): Buffer } {
  const parts: Buffer[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      parts.push(Buffer.from(chunk));
      if (delayMs > 0) setTimeout(callback, delayMs);
      else callback();
    },
  });
  return { stream, received: () => Buffer.concat(parts) };
}

async function hashThrough(data: Buffer, piece: number, delayMs = 0): Promise<{ hex: string; bytes: number; passed: Buffer }> {
  const counter = sha256Counter();
  const out = sink(delayMs);
  await pipeline(Readable.from(pieces(data, piece)), counter.stream, out.stream);
  return { hex: await counter.digest(), bytes: counter.bytes(), passed: out.received() };
}

describe('sha256Counter: SHA-256 in the hashing thread', () => {
  it('gives the digest and the count of every size, around the slot boundaries, whatever the pieces', async () => {
    const sizes = [0, 1, 1000, SLOT - 1, SLOT, SLOT + 1, 4 * SLOT, 4 * SLOT + 1, 9 * SLOT + 12_345, 5_000_000];
    for (const size of sizes) {
      const data = crypto.randomBytes(size);
      for (const piece of [65_536, 7_777, 3 * 1024 * 1024]) {
        const { hex, bytes, passed } = await hashThrough(data, piece);
        assert.equal(hex, sha256(data), `digest of ${size} bytes in pieces of ${piece}`);
        assert.equal(bytes, size);
        assert.ok(passed.equals(data), 'every byte passes on, in order');
      }
    }
    assert.equal(hashThreadStreams(), 0, 'no stream left open in the thread');
  });

  it('hashes many streams at once, each its own bytes, with a slow reader behind some', async () => {
    const inputs = Array.from({ length: 12 }, (_, i) => crypto.randomBytes(SLOT * 3 + i * 50_001));
    const results = await Promise.all(inputs.map((data, i) => hashThrough(data, 16_384 + i * 1_000, i % 3 === 0 ? 1 : 0)));
    results.forEach(({ hex, bytes }, i) => {
      assert.equal(hex, sha256(inputs[i]!));
      assert.equal(bytes, inputs[i]!.length);
    });
    assert.equal(hashThreadStreams(), 0);
    assert.equal(await hashThreadHeld(), 0);
  });

  it('hashes a file of a slot or less on the event loop, without the thread', async () => {
    const counter = sha256Counter();
    const data = crypto.randomBytes(SLOT);
    counter.stream.resume();
    counter.stream.write(data.subarray(0, 1000));
    counter.stream.write(data.subarray(1000));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(hashThreadStreams(), 0, 'not opened in the thread');
    counter.stream.end();
    assert.equal(await counter.digest(), sha256(data));
    assert.equal(hashThreadStreams(), 0);
  });

  it('drops the hash of a stream destroyed before its end; its digest rejects', async () => {
    const counter = sha256Counter();
    const data = crypto.randomBytes(3 * SLOT);
    counter.stream.resume();
    counter.stream.write(data);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(hashThreadStreams(), 1, 'open in the thread once a slot was handed over');
    const errored = new Promise((resolve) => counter.stream.once('error', resolve));
    counter.stream.destroy(new Error('client went away'));
    await errored;
    await assert.rejects(counter.digest(), /client went away/);
    assert.equal(hashThreadStreams(), 0);
    assert.equal(await hashThreadHeld(), 0, 'the thread dropped its hash');
    // A pipeline that fails upstream destroys it too.
    const failing = sha256Counter();
    const source = new Readable({
      read() {
        this.push(crypto.randomBytes(SLOT));
        this.destroy(new Error('socket reset'));
      },
    });
    await assert.rejects(pipeline(source, failing.stream, sink().stream), /socket reset/);
    await assert.rejects(failing.digest());
    assert.equal(hashThreadStreams(), 0);
    assert.equal(await hashThreadHeld(), 0);
  });

  it('fails the streams in a thread that ends, and starts another for the next file', async () => {
    const counter = sha256Counter();
    counter.stream.resume();
    counter.stream.write(crypto.randomBytes(2 * SLOT));
    await new Promise((resolve) => setImmediate(resolve));
    await stopHashThread();
    await assert.rejects(counter.digest(), (error) => error instanceof HashThreadFailed && /hashing thread stopped/.test(error.message));
    await assert.rejects(
      new Promise((resolve, reject) => {
        counter.stream.once('error', reject);
        counter.stream.write(crypto.randomBytes(SLOT), (error) => (error ? reject(error) : resolve(null)));
      }),
      /hashing thread/,
    );
    const data = crypto.randomBytes(5 * SLOT + 3);
    assert.equal((await hashThrough(data, 65_536)).hex, sha256(data));
  });

  it('keeps no memory of the files it hashed: every batch comes back and is freed here', () => {
    // 300 files of 1.1 MB one after another, then a full collection of this (child) process's
    // heap: what the thread was handed must not stay behind in the thread's, which rarely collects.
    const script = `
      import crypto from 'node:crypto';
      import { Readable, Writable } from 'node:stream';
      import { pipeline } from 'node:stream/promises';
      import { sha256Counter } from ${JSON.stringify(new URL('../../src/blobs/sha256.ts', import.meta.url).href)};
      const data = crypto.randomBytes(1_100_000);
      const start = process.memoryUsage().arrayBuffers;
      for (let i = 0; i < 300; i++) {
        const counter = sha256Counter();
        await pipeline(Readable.from([data.subarray(0, 600_000), data.subarray(600_000)]), counter.stream, new Writable({ write: (_c, _e, cb) => cb() }));
        await counter.digest();
      }
      globalThis.gc();
      await new Promise((resolve) => setTimeout(resolve, 100));
      globalThis.gc();
      console.log(Math.round((process.memoryUsage().arrayBuffers - start) / 1048576));
    `;
    const run = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(run.status, 0, run.stderr);
    const grownMiB = Number(run.stdout.trim());
    assert.ok(grownMiB < 16, `array buffers grew by ${grownMiB} MiB over 300 files of 1.1 MB`);
  });

  it('never keeps a process alive once its files are hashed', () => {
    // A process that hashes a file through the thread and has nothing else to do ends by itself.
    const script = `
      import crypto from 'node:crypto';
      import { Readable, Writable } from 'node:stream';
      import { pipeline } from 'node:stream/promises';
      import { sha256Counter } from ${JSON.stringify(new URL('../../src/blobs/sha256.ts', import.meta.url).href)};
      const data = crypto.randomBytes(3_000_000);
      const counter = sha256Counter();
      await pipeline(Readable.from([data]), counter.stream, new Writable({ write: (_c, _e, cb) => cb() }));
      const ok = (await counter.digest()) === crypto.createHash('sha256').update(data).digest('hex');
      console.log(ok ? 'same digest' : 'different digest');
    `;
    const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(run.signal, null, `ended by itself (stderr: ${run.stderr})`);
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout.trim(), 'same digest');
  });
});
