import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import spectralCore from '@stoplight/spectral-core';
import spectralParsers from '@stoplight/spectral-parsers';
import { oas } from '@stoplight/spectral-rulesets';
import { createTestContext, type TestContext } from '../helpers/context.js';

/**
 * The served OpenAPI document passes Redocly's `recommended` ruleset (as `redocly lint` runs it)
 * and Spectral's `spectral:oas` (as `spectral lint` runs it), with no error and no warning. The
 * counts are printed, so the test output shows them.
 */
describe('OpenAPI document lint', () => {
  let ctx: TestContext;
  let source: string;

  before(async () => {
    ctx = await createTestContext();
    const res = await ctx.app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
    assert.equal(res.statusCode, 200);
    source = JSON.stringify(JSON.parse(res.body), null, 2);
  });
  after(() => ctx.close());

  it('Redocly recommended: 0 errors, 0 warnings', async () => {
    const config = await createConfig({ extends: ['recommended'] });
    const problems = await lintFromString({ source, absoluteRef: 'openapi.json', config });
    const errors = problems.filter((p) => p.severity === 'error');
    const warnings = problems.filter((p) => p.severity === 'warn');
    console.log(`redocly lint (recommended): ${errors.length} errors, ${warnings.length} warnings`);
    assert.deepEqual(
      problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`),
      [],
    );
  });

  it('Spectral spectral:oas: 0 errors, 0 warnings', async () => {
    const spectral = new spectralCore.Spectral();
    spectral.setRuleset({ extends: [[oas as never, 'recommended']] } as never);
    const results = await spectral.run(new spectralCore.Document(source, spectralParsers.Json, 'openapi.json'));
    // Severities: 0 error, 1 warning, 2 information, 3 hint (the CLI fails on warnings and errors).
    const errors = results.filter((r) => r.severity === 0);
    const warnings = results.filter((r) => r.severity === 1);
    console.log(`spectral lint (spectral:oas): ${errors.length} errors, ${warnings.length} warnings`);
    assert.deepEqual(
      [...errors, ...warnings].map((r) => `${r.severity === 0 ? 'error' : 'warning'} ${String(r.code)}: ${r.message} at ${r.path.join('.')}`),
      [],
    );
  });
});
