/**
 * Where one upload's time goes in the `s3` store, phase by phase, through the store's own code
 * (`S3BlobStore`): the body written in 64 KiB pieces as a request delivers it (parts sent as they
 * fill), `end()` (the last part and CompleteMultipartUpload), and `commit()` (CopyObject to the
 * hash's key and the removal of the upload's object). The peer is the s3rver stand-in of
 * bench/upload.ts, in a process of its own; its CPU per phase is read from /proc.
 *
 *   node --import tsx bench/s3-phases.ts        # BENCH_ROUNDS (5), BENCH_MB (50)
 */
import { execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { S3BlobStore } from '../src/blobs/s3.js';
import { freePort, median } from './lib.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const MB = Number(process.env.BENCH_MB ?? 50);
const PIECE = 64 * 1024;
const ROOT = path.resolve(import.meta.dirname, '..');
const TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

function cpuMs(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS;
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'formsign-s3-phases-'));
const port = await freePort();
const bucket = 'bench';
const peer = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench/s3-standin.ts')], { env: { PATH: process.env.PATH, PORT: String(port), DIR: work, BUCKET: bucket }, stdio: ['ignore', 'pipe', 'inherit'] });
await new Promise((resolve) => peer.stdout!.once('data', resolve));
const store = new S3BlobStore({ endpoint: `http://127.0.0.1:${port}`, bucket, region: 'us-east-1', credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' }, forcePathStyle: true, prefix: 'docs/' });

const phases = ['body', 'end', 'commit'] as const;
const wall: Record<(typeof phases)[number], number[]> = { body: [], end: [], commit: [] };
const peerCpu: Record<(typeof phases)[number], number[]> = { body: [], end: [], commit: [] };
console.log(`s3 store, one ${MB} MB upload at a time, ${ROUNDS} rounds (after one warm-up), Node ${process.version}, ${os.cpus().length} cores`);
try {
  for (let round = 0; round <= ROUNDS; round++) {
    const bytes = crypto.randomBytes(MB * 1_000_000);
    const staged = path.join(work, `staged-${round}`);
    fs.writeFileSync(staged, bytes);
    const sha256 = crypto.createHash('sha256').update(bytes).digest('hex');
    const upload = store.startUpload(`round-${round}`, { staged, remember: async () => {} });
    const times: number[] = [];
    const cpus: number[] = [];
    const mark = () => {
      times.push(performance.now());
      cpus.push(cpuMs(peer.pid!));
    };
    mark();
    for (let at = 0; at < bytes.length; at += PIECE) await upload.write(bytes.subarray(at, at + PIECE));
    mark();
    await upload.end();
    mark();
    await upload.commit(sha256, bytes.length, null as never); // the s3 store keeps nothing in the database
    mark();
    fs.rmSync(staged);
    if (round === 0) continue;
    phases.forEach((phase, i) => {
      wall[phase].push(times[i + 1]! - times[i]!);
      peerCpu[phase].push(cpus[i + 1]! - cpus[i]!);
    });
    console.log(`  round ${round}: ` + phases.map((p, i) => `${p} ${(times[i + 1]! - times[i]!).toFixed(0)} ms (s3rver ${(cpus[i + 1]! - cpus[i]!).toFixed(0)} ms CPU)`).join(', '));
  }
  const total = phases.reduce((sum, p) => sum + median(wall[p]), 0);
  console.log('medians:');
  for (const p of phases) console.log(`  ${p.padEnd(7)} ${median(wall[p]).toFixed(0).padStart(6)} ms  ${((median(wall[p]) / total) * 100).toFixed(0).padStart(3)} %  s3rver CPU ${median(peerCpu[p]).toFixed(0)} ms`);
} finally {
  await store.close();
  peer.kill('SIGTERM');
  await new Promise((resolve) => peer.once('exit', resolve));
  fs.rmSync(work, { recursive: true, force: true });
}
