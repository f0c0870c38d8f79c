/**
 * What hashing an upload costs the event loop: 50 MB in 64 KiB pieces through a pass-through
 * stream (the baseline), through one that hashes on the event loop (the code before the hashing
 * thread), and through `sha256Counter` (the hashing thread); and the SHA-256 of 5 MiB parts (an
 * `s3` upload's) by `crypto` on the event loop against `sha256Of`. CPU time of this process's
 * main thread alone (`/proc/self/task/<pid>/stat`), in the same rounds, in turn.
 *
 *   node --import tsx bench/hashing.ts          # BENCH_ROUNDS (default 9)
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import { Readable, Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { sha256Counter, sha256Of, startHashThread } from '../src/blobs/sha256.js';
import { median } from './lib.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const SIZE = 50 * 1024 * 1024;
const PART = 5 * 1024 * 1024;
const data = crypto.randomBytes(SIZE);
const pieces = Array.from({ length: Math.ceil(SIZE / 65_536) }, (_, i) => data.subarray(i * 65_536, (i + 1) * 65_536));

/** CPU ms of the main thread (user + system), to the kernel's clock tick (10 ms): summed over many rounds. */
function mainCpuMs(): number {
  const stat = fs.readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

type Hasher = { stream: Transform; digest(): Promise<string> };
const passThrough = (): Hasher => ({ stream: new Transform({ transform: (chunk, _e, cb) => cb(null, chunk) }), digest: async () => '' });
const onTheLoop = (): Hasher => {
  const hash = crypto.createHash('sha256');
  return { stream: new Transform({ transform: (chunk: Buffer, _e, cb) => (hash.update(chunk), cb(null, chunk)) }), digest: async () => hash.digest('hex') };
};

/** Main-thread CPU and wall time of one 50 MB stream through `make()`, into a sink that takes each piece on the next turn (as a file would). */
async function streamOnce(make: () => Hasher): Promise<{ cpu: number; ms: number }> {
  const hasher = make();
  const cpu = mainCpuMs();
  const started = performance.now();
  await pipeline(Readable.from(pieces), hasher.stream, new Writable({ write: (_c, _e, cb) => setImmediate(cb) }));
  await hasher.digest();
  return { cpu: mainCpuMs() - cpu, ms: performance.now() - started };
}

/** The same for the 10 parts of 5 MiB of a 50 MB file, each hashed whole. */
async function partsOnce(hash: (part: Buffer) => Promise<string>): Promise<{ cpu: number; ms: number }> {
  const cpu = mainCpuMs();
  const started = performance.now();
  for (let at = 0; at < SIZE; at += PART) await hash(data.subarray(at, at + PART));
  return { cpu: mainCpuMs() - cpu, ms: performance.now() - started };
}

startHashThread();
const cases: Array<[string, () => Promise<{ cpu: number; ms: number }>]> = [
  ['upload: passed on only (baseline)', () => streamOnce(passThrough)],
  ['upload: hashed on the event loop', () => streamOnce(onTheLoop)],
  ['upload: hashed in the thread (sha256Counter)', () => streamOnce(sha256Counter)],
  ['s3 parts: crypto on the event loop', () => partsOnce(async (part) => crypto.createHash('sha256').update(part).digest('hex'))],
  ['s3 parts: in the thread (sha256Of)', () => partsOnce(sha256Of)],
];
const results = new Map<string, { cpu: number[]; ms: number[] }>(cases.map(([name]) => [name, { cpu: [], ms: [] }]));
for (let round = 0; round <= ROUNDS; round++) {
  for (const [name, run] of cases) {
    const { cpu, ms } = await run();
    if (round === 0) continue; // warm-up
    results.get(name)!.cpu.push(cpu);
    results.get(name)!.ms.push(ms);
  }
}
console.log(`SHA-256 of 50 MB (64 KiB pieces) and of its 10 parts of 5 MiB, ${ROUNDS} rounds, Node ${process.version}: the event loop's CPU (main thread)`);
const cpuOf = (name: string) => results.get(name)!.cpu.reduce((a, b) => a + b, 0) / ROUNDS;
for (const [name] of cases) {
  const r = results.get(name)!;
  console.log(`  ${name.padEnd(46)} event loop ${cpuOf(name).toFixed(1).padStart(6)} ms  (wall ${median(r.ms).toFixed(0)} ms, median)`);
}
const base = cpuOf('upload: passed on only (baseline)');
const before = cpuOf('upload: hashed on the event loop') - base;
const now = cpuOf('upload: hashed in the thread (sha256Counter)') - base;
console.log(`the hashing's share of the event loop per 50 MB upload: ${before.toFixed(1)} ms on the loop, ${now.toFixed(1)} ms through the thread: ratio ${(now / before).toFixed(2)}`);
console.log(`s3 parts: ratio ${(cpuOf('s3 parts: in the thread (sha256Of)') / cpuOf('s3 parts: crypto on the event loop')).toFixed(2)}`);
process.exit(0);
