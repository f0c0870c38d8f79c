import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { claimKey, finishKey, releaseKey, renewKey } from '../../src/store/idempotency.js';
import { createTestDatabase, type TestDatabase } from '../helpers/context.js';

// A claim taken over after its lease ran out (a first request still running, slowly) must not be
// finished or released by that first request: only the claim's own token touches the row.
describe('idempotency claims: a taken-over claim is the new owner\'s', () => {
  let database: TestDatabase;
  before(async () => {
    database = await createTestDatabase();
  });
  after(() => database.drop());

  const input = (nowMs: number) => ({ workspaceId: 'w', key: 'k', method: 'POST', path: '/api/v1/forms', fingerprint: 'f', nowMs, leaseMs: 1000 });
  const row = () => database.store.db.selectFrom('idempotency_keys').selectAll().where('key', '=', 'k').executeTakeFirstOrThrow();

  it('the first owner\'s late finish and release change nothing; the new owner\'s finish keeps its answer', async () => {
    const t0 = Date.parse('2026-11-25T00:00:00.000Z');
    const first = await claimKey(database.store.db, input(t0));
    assert.equal(first.kind, 'owner');
    // Within the lease: the retry is told to wait.
    assert.equal((await claimKey(database.store.db, input(t0 + 500))).kind, 'existing');
    // After it: the retry takes the claim over.
    const second = await claimKey(database.store.db, input(t0 + 2000));
    assert.equal(second.kind, 'owner');
    assert.ok(first.kind === 'owner' && second.kind === 'owner' && first.token !== second.token);

    await finishKey(database.store.db, 'w', 'k', first.token, { status: 201, headers: {}, body: 'first' });
    await releaseKey(database.store.db, 'w', 'k', first.token);
    assert.equal((await row()).state, 'running', 'the first request touched a claim that is no longer its own');

    await finishKey(database.store.db, 'w', 'k', second.token, { status: 201, headers: {}, body: 'second' });
    const kept = await row();
    assert.deepEqual([kept.state, kept.response_body], ['done', 'second']);
  });

  it('a renewal moves the token: the old one finishes nothing, the lease runs from the renewal, and a takeover stops the renewals', async () => {
    const t0 = Date.parse('2026-11-26T00:00:00.000Z');
    const at = (ms: number) => ({ ...input(ms), key: 'r' });
    const rowR = () => database.store.db.selectFrom('idempotency_keys').selectAll().where('key', '=', 'r').executeTakeFirstOrThrow();
    const first = await claimKey(database.store.db, at(t0));
    assert.ok(first.kind === 'owner');
    const renewed = new Date(t0 + 800 + 1000).toISOString();
    assert.equal(await renewKey(database.store.db, 'w', 'r', first.token, renewed), true);
    // Past the first lease but within the renewed one: still the owner's.
    assert.equal((await claimKey(database.store.db, at(t0 + 1500))).kind, 'existing');
    await finishKey(database.store.db, 'w', 'r', first.token, { status: 201, headers: {}, body: 'stale token' });
    assert.equal((await rowR()).state, 'running');
    // Past the renewed lease: taken over, and the old owner's renewal is refused.
    const second = await claimKey(database.store.db, at(t0 + 2000));
    assert.equal(second.kind, 'owner');
    assert.equal(await renewKey(database.store.db, 'w', 'r', renewed, new Date(t0 + 5000).toISOString()), false);
    await finishKey(database.store.db, 'w', 'r', renewed, { status: 201, headers: {}, body: 'first' });
    assert.equal((await rowR()).state, 'running');
  });
});
