#!/usr/bin/env node
// Runs the README's walk-through as written: the ```sh blocks between <!-- walkthrough:start -->
// and <!-- walkthrough:end -->, in order, in one bash (set -euo pipefail), from the repository's
// root, against the server at $BASE (default http://127.0.0.1:3000, started with `npm start`).
// A block that fails (an id that is not in an answer, a replay header missing, other bytes
// downloaded, a parse job that does not complete) fails the run. CI runs it (.ci/run).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
const start = readme.indexOf('<!-- walkthrough:start -->');
const end = readme.indexOf('<!-- walkthrough:end -->');
if (start < 0 || end < start) {
  console.error('README.md: the walkthrough markers are missing');
  process.exit(1);
}
const blocks = [...readme.slice(start, end).matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]);
if (blocks.length === 0) {
  console.error('README.md: no sh block between the walkthrough markers');
  process.exit(1);
}
const script = ['set -euo pipefail', ...blocks.map((block, i) => `echo; echo "== walk-through, block ${i + 1} of ${blocks.length}"\n${block}`), 'echo; echo "walk-through: ok"'].join('\n');
const run = spawnSync('bash', ['-c', script], { cwd: root, stdio: 'inherit', env: process.env });
process.exit(run.status ?? 1);
