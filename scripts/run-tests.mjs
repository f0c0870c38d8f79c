#!/usr/bin/env node
// Runs every test/**/*.test.ts with the Node test runner (TypeScript through tsx). Each file runs
// in its own process with its own database. Extra arguments are file filters (substrings).
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';

function find(dir) {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return find(full);
    return name.endsWith('.test.ts') ? [full] : [];
  });
}

const filters = process.argv.slice(2);
const files = find('test')
  .filter((f) => filters.length === 0 || filters.some((s) => f.includes(s)))
  .sort();
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
// The command-line tests run the built `formsign` (dist/), so build it first.
const build = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);
const db = process.env.FORMSIGN_TEST_DB ?? 'sqlite';
console.log(`formsign tests: ${files.length} files, database ${db}${process.env.FORMSIGN_TEST_REDIS_URL ? ', Redis rate limiter' : ''}`);
const child = spawn(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-reporter=spec', `--test-concurrency=${process.env.TEST_CONCURRENCY ?? 2}`, ...files],
  { stdio: 'inherit' },
);
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
