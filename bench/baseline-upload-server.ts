/**
 * The baseline of bench/upload.ts: a bare @fastify/multipart route that streams the file part to
 * disk and answers. No auth, no hashing, no type check, no analysis, no database.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import multipart from '@fastify/multipart';
import Fastify from 'fastify';

const dir = process.env.DATA_DIR!;
const app = Fastify({ logger: false });
await app.register(multipart, { limits: { fileSize: 52_428_800, files: 1 } });
app.get('/healthz', async () => ({ ok: true }));
let n = 0;
app.post('/upload', async (request) => {
  const file = await request.file();
  if (!file) throw new Error('no file');
  const target = path.join(dir, `upload-${process.pid}-${n++}`);
  await pipeline(file.file, fs.createWriteStream(target));
  fs.rmSync(target);
  return { ok: true, truncated: file.file.truncated };
});
await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT) });
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
