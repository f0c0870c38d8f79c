import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { createTestContext, type TestContext } from '../helpers/context.js';

const CLIENT = path.resolve(import.meta.dirname, '../../clients/typescript');

/**
 * The committed client types (clients/typescript/src/schema.ts) are what openapi-typescript makes
 * of the document the service serves now; after an API change, `npm run client:generate`.
 */
describe('TypeScript client: generated code', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestContext();
  });
  after(() => ctx.close());

  it('src/schema.ts is not stale', async () => {
    assert.ok(fs.existsSync(path.join(CLIENT, 'node_modules/openapi-typescript')), 'the client\'s dependencies are installed by `npm ci` (prepare): run `npm ci --prefix clients/typescript`');
    const { schemaText } = (await import(pathToFileURL(path.join(CLIENT, 'generate.mjs')).href)) as { schemaText(document: unknown): Promise<string> };
    const document = JSON.parse((await ctx.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).body);
    const expected = await schemaText(document);
    const committed = fs.readFileSync(path.join(CLIENT, 'src/schema.ts'), 'utf8');
    assert.ok(committed === expected, 'clients/typescript/src/schema.ts is stale: run `npm run client:generate` and commit it');
  });

  it('the client type-checks with its own TypeScript (as a consumer compiles it)', () => {
    const tsc = spawnSync(process.execPath, [path.join(CLIENT, 'node_modules/typescript/bin/tsc'), '-p', path.join(CLIENT, 'tsconfig.json')], { encoding: 'utf8' });
    assert.equal(tsc.status, 0, tsc.stdout + tsc.stderr);
  });

  it('calls as an integrator writes them type-check, with exactOptionalPropertyTypes (typecheck/usage.ts)', () => {
    const tsc = spawnSync(process.execPath, [path.join(CLIENT, 'node_modules/typescript/bin/tsc'), '-p', path.join(CLIENT, 'tsconfig.usage.json')], { encoding: 'utf8' });
    assert.equal(tsc.status, 0, tsc.stdout + tsc.stderr);
  });
});
