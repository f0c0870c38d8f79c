import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createStore } from '../../src/store/db.js';
import { bearer, createTestContext, type TestContext } from '../helpers/context.js';

/**
 * `POST /forms/{id}/evaluate` on the draft keeps the compiled draft until the form changes
 * (issue 14, item 16): every kind of change is seen by the next evaluation, also a change made
 * through another server on the same database.
 */
describe('the draft kept per server (compiled for evaluation, as JSON for reading) is never stale', () => {
  let ctx: TestContext;
  let other: TestContext;
  let headers: Record<string, string>;

  before(async () => {
    ctx = await createTestContext();
    // A second server: its own app and its own connection to the same database.
    const store = createStore(ctx.database.location);
    other = await createTestContext({ database: { store, location: ctx.database.location, drop: () => store.close() } });
    headers = bearer(await ctx.key(['forms:read', 'forms:write', 'forms:delete', 'revisions:read'], 'cache'));
  });
  after(async () => {
    await other.close();
    await other.database.drop();
    await ctx.close();
  });

  const on = (server: TestContext) => (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown) =>
    server.app.inject({ method, url: `/api/v1${url}`, headers, ...(payload === undefined ? {} : { payload: payload as object }) });
  const send = (...args: Parameters<ReturnType<typeof on>>) => on(ctx)(...args);
  async function ok(res: { statusCode: number; body: string; json(): { data: Record<string, unknown> & { id: string } } }, status = 200) {
    assert.equal(res.statusCode, status, res.body);
    return res.json().data;
  }

  it('sees every kind of change: questions, choices, rules, sections', async () => {
    const form = (await ok(await send('POST', '/forms', { title: 'Cache' }), 201)).id;
    const evaluate = async (answers: object) => ok(await send('POST', `/forms/${form}/evaluate`, { answers })) as Promise<Record<string, string[]>>;
    const has = await ok(await send('POST', `/forms/${form}/questions`, { questionText: 'Company?', type: 'yes_no' }), 201);
    const name = await ok(await send('POST', `/forms/${form}/questions`, { questionText: 'Name', type: 'short_text' }), 201);
    const pick = await ok(await send('POST', `/forms/${form}/questions`, { questionText: 'Pick', type: 'mcq', options: { choices: ['a', 'b'] } }), 201);
    const rule = await ok(await send('POST', `/forms/${form}/rules`, { action: 'show', targetQuestionId: name.id, sourceQuestionId: has.id, operator: 'equals', value: true }), 201);
    assert.deepEqual((await evaluate({ [has.id]: true })).hiddenQuestionIds, []);
    assert.deepEqual((await evaluate({ [has.id]: false })).hiddenQuestionIds, [name.id]);

    // A rule edited, created, deleted.
    await ok(await send('PUT', `/forms/${form}/rules/${rule.id}`, { value: false }));
    assert.deepEqual((await evaluate({ [has.id]: true })).hiddenQuestionIds, [name.id], 'rule edit');
    const hide = await ok(await send('POST', `/forms/${form}/rules`, { action: 'hide', targetQuestionId: pick.id, sourceQuestionId: has.id, operator: 'equals', value: true }), 201);
    assert.deepEqual((await evaluate({ [has.id]: true })).hiddenQuestionIds, [name.id, pick.id], 'rule create');
    await ok(await send('DELETE', `/forms/${form}/rules/${hide.id}`));
    assert.deepEqual((await evaluate({ [has.id]: true })).hiddenQuestionIds, [name.id], 'rule delete');

    // A choice added: the answer it allows is accepted at once.
    assert.equal((await send('POST', `/forms/${form}/evaluate`, { answers: { [pick.id]: 'c' } })).statusCode, 400);
    await ok(await send('PUT', `/forms/${form}/questions/${pick.id}`, { options: { choices: ['a', 'b', 'c'] } }));
    assert.equal((await send('POST', `/forms/${form}/evaluate`, { answers: { [pick.id]: 'c' } })).statusCode, 200, 'choice edit');

    // Questions edited, created, deleted.
    assert.deepEqual((await evaluate({})).missingRequiredQuestionIds, []);
    await ok(await send('PUT', `/forms/${form}/questions/${pick.id}`, { isRequired: true }));
    assert.deepEqual((await evaluate({})).missingRequiredQuestionIds, [pick.id], 'question edit');
    const added = await ok(await send('POST', `/forms/${form}/questions`, { questionText: 'Later', type: 'number', order: 0 }), 201);
    assert.deepEqual((await evaluate({})).visibleQuestionIds, [added.id, has.id, pick.id], 'question create, in its place');
    await ok(await send('DELETE', `/forms/${form}/questions/${added.id}`));
    assert.deepEqual((await evaluate({})).visibleQuestionIds, [has.id, pick.id], 'question delete');

    // Sections created, moved, given a rule, holding a question, deleted.
    const first = await ok(await send('POST', `/forms/${form}/sections`, { title: 'First' }), 201);
    assert.deepEqual((await evaluate({})).visibleSectionIds, [first.id], 'section create');
    const second = await ok(await send('POST', `/forms/${form}/sections`, { title: 'Second' }), 201);
    await ok(await send('PUT', `/forms/${form}/sections/${second.id}`, { order: 0 }));
    assert.deepEqual((await evaluate({})).visibleSectionIds, [second.id, first.id], 'section edit (order)');
    await ok(await send('POST', `/forms/${form}/rules`, { action: 'hide', targetSectionId: second.id, sourceQuestionId: has.id, operator: 'equals', value: false }), 201);
    await ok(await send('PUT', `/forms/${form}/questions/${pick.id}`, { sectionId: second.id }));
    const hidden = await evaluate({ [has.id]: false });
    assert.deepEqual([hidden.hiddenSectionIds, hidden.hiddenQuestionIds], [[second.id], [pick.id]], 'a question moved into a hidden section');
    await ok(await send('DELETE', `/forms/${form}/sections/${second.id}`));
    const afterDelete = await evaluate({ [has.id]: false });
    assert.deepEqual([afterDelete.visibleSectionIds, afterDelete.hiddenQuestionIds], [[first.id], []], 'section delete');

    // Deleted: 404 at once, however warm the cache.
    await ok(await send('DELETE', `/forms/${form}`));
    assert.equal((await send('POST', `/forms/${form}/evaluate`, { answers: {} })).statusCode, 404);
  });

  it('sees a change made through another server on the same database at once, however quickly they follow', async () => {
    const here = on(ctx);
    const there = on(other);
    const form = (await ok(await here('POST', '/forms', { title: 'Two servers' }), 201)).id;
    const source = await ok(await here('POST', `/forms/${form}/questions`, { questionText: 'N', type: 'number' }), 201);
    const target = await ok(await here('POST', `/forms/${form}/questions`, { questionText: 'T', type: 'short_text' }), 201);
    const rule = await ok(await here('POST', `/forms/${form}/rules`, { action: 'show', targetQuestionId: target.id, sourceQuestionId: source.id, operator: 'greater_than', value: 0 }), 201);
    const shownOn = async (server: typeof here, n: number) =>
      !((await ok(await server('POST', `/forms/${form}/evaluate`, { answers: { [source.id]: n } }))).hiddenQuestionIds as string[]).includes(target.id);
    // Each round: both servers hold the draft compiled; the other server moves the threshold; this
    // one must see it at once (rounds follow within the same millisecond often).
    for (let threshold = 1; threshold <= 30; threshold++) {
      assert.equal(await shownOn(here, threshold), true, `round ${threshold}: ${threshold} > ${threshold - 1}`);
      assert.equal(await shownOn(there, threshold), true);
      await ok(await there('PUT', `/forms/${form}/rules/${rule.id}`, { value: threshold }));
      assert.equal(await shownOn(here, threshold), false, `round ${threshold}: not stale on this server`);
      const read = (await ok(await here('GET', `/forms/${form}`))) as unknown as { rules: Array<{ conditions: Array<{ value: number }> }> };
      assert.equal(read.rules[0]!.conditions[0]!.value, threshold, 'nor is GET /forms/{id}');
      assert.equal(await shownOn(here, threshold + 1), true);
    }
    // With the clock standing still (every change within one millisecond, or a server whose clock
    // is behind), each change must still move the draft's stamp.
    const realNow = Date.now;
    const frozen = realNow();
    Date.now = () => frozen;
    try {
      for (let threshold = 31; threshold <= 35; threshold++) {
        assert.equal(await shownOn(here, threshold), true);
        await ok(await there('PUT', `/forms/${form}/rules/${rule.id}`, { value: threshold }));
        assert.equal(await shownOn(here, threshold), false, `frozen clock, round ${threshold}: not stale`);
        assert.equal(((await ok(await here('GET', `/forms/${form}`))) as unknown as { rules: Array<{ conditions: Array<{ value: number }> }> }).rules[0]!.conditions[0]!.value, threshold);
      }
    } finally {
      Date.now = realNow;
    }
    // Revisions are evaluated as published, whatever the draft does afterwards.
    await ok(await there('POST', `/forms/${form}/publish`), 201);
    await ok(await there('PUT', `/forms/${form}/rules/${rule.id}`, { value: 100 }));
    const published = await ok(await here('POST', `/forms/${form}/evaluate`, { answers: { [source.id]: 50 }, version: 1 }));
    assert.deepEqual(published.hiddenQuestionIds, []);
    assert.equal(await shownOn(here, 50), false, 'the draft moved on');
  });
});
