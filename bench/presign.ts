/**
 * Presigned download URLs (the s3 store's `presign`) in a burst: 100 reads at once of a list of
 * 100 documents ask for 10,000 URLs of 100 files. The store keeps each URL for the second it was
 * made in (a URL signed again in that second would be the same), against signing every one
 * (`getSignedUrl`, as before), in the same run. No S3 server is needed: presigning is local.
 *
 *   node --import tsx bench/presign.ts
 */
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { S3BlobStore } from '../src/blobs/s3.js';
import { median } from './lib.js';

const store = new S3BlobStore({ bucket: 'bench', region: 'us-east-1', endpoint: 'http://127.0.0.1:9', forcePathStyle: true, credentials: { accessKeyId: 'bench', secretAccessKey: 'bench-secret' }, prefix: '' });
const files = Array.from({ length: 100 }, (_, i) => i.toString(16).padStart(64, '0'));
const options = (i: number) => ({ expiresInS: 900, contentType: 'application/pdf', contentDisposition: `attachment; filename="contract-${i}.pdf"` });

/** One burst: 100 lists of the same 100 files, awaited together as concurrent requests would be. */
async function burst(sign: (sha: string, i: number) => Promise<string>): Promise<number> {
  // Start at the beginning of a second, so that the burst stays within it.
  await new Promise((r) => setTimeout(r, 1005 - (Date.now() % 1000)));
  const started = performance.now();
  await Promise.all(Array.from({ length: 100 }, () => Promise.all(files.map((sha, i) => sign(sha, i)))));
  return performance.now() - started;
}

const kept = (sha: string, i: number) => store.presign(sha, options(i));
const each = (sha: string, i: number) =>
  getSignedUrl(store.client, new GetObjectCommand({ Bucket: 'bench', Key: sha, ResponseContentType: 'application/pdf', ResponseContentDisposition: options(i).contentDisposition }), { expiresIn: 900 });

const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const times = { kept: [] as number[], each: [] as number[] };
await burst(kept);
await burst(each);
for (let round = 0; round < rounds; round++) {
  times.each.push(await burst(each));
  times.kept.push(await burst(kept));
}
const k = median(times.kept);
const e = median(times.each);
console.log(`10,000 presigned URLs of 100 files in one second, median of ${rounds} rounds: signed each time ${e.toFixed(0)} ms, kept for the second ${k.toFixed(0)} ms: ${(e / k).toFixed(1)} × less time`);
