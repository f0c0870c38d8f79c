#!/usr/bin/env node
// `npm run bench:stall`: runs every bench/stall-*.ts (except the shared stall-lib.ts) one after
// another, each in its own process; exits non-zero when any of them does (an attack missed a goal).
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';

const dir = path.resolve(import.meta.dirname, '../bench');
const files = readdirSync(dir)
  .filter((f) => /^stall-.*\.ts$/.test(f) && f !== 'stall-lib.ts')
  .sort();
let failed = 0;
for (const file of files) {
  console.log(`\n== bench/${file}`);
  const run = spawnSync(process.execPath, ['--import', 'tsx', path.join(dir, file)], { stdio: 'inherit' });
  if (run.status !== 0) failed++;
}
if (files.length === 0) console.log('no bench/stall-*.ts files');
process.exit(failed ? 1 : 0);
