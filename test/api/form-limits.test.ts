import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { newId } from '../../src/domain/ids.js';
import { LIMITS } from '../../src/domain/limits.js';
import { formBytes } from '../../src/store/form-content.js';
import { nextStamp } from '../../src/store/live.js';
import { bearer, createTestContext, type TestContext } from '../helpers/context.js';

/**
 * The contractual limits of forms and answers (issue 14, items 1 and 2): each refused with the
 * contract's code and a hint naming the limit, and nothing changed.
 */
describe('form and answer limits', () => {
  let ctx: TestContext;
  let headers: Record<string, string>;

  before(async () => {
    ctx = await createTestContext();
    headers = bearer(await ctx.key(['forms:read', 'forms:write', 'forms:delete', 'revisions:read'], 'limits'));
  });
  after(() => ctx.close());

  const send = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown) =>
    ctx.app.inject({ method, url: `/api/v1${url}`, headers, ...(payload === undefined ? {} : { payload: payload as object }) });
  async function newForm(): Promise<string> {
    const res = await send('POST', '/forms', { title: 'Limits' });
    assert.equal(res.statusCode, 201);
    return res.json().data.id;
  }
  async function create(form: string, kind: 'questions' | 'sections' | 'rules', body: object): Promise<{ id: string } & Record<string, unknown>> {
    const res = await send('POST', `/forms/${form}/${kind}`, body);
    assert.equal(res.statusCode, 201, res.body);
    return res.json().data;
  }
  function expectError(res: { statusCode: number; json(): { code: string; hint: string; success: boolean } }, status: number, code: string, hint: RegExp) {
    assert.equal(res.statusCode, status, JSON.stringify(res.json()));
    assert.equal(res.json().success, false);
    assert.equal(res.json().code, code);
    assert.match(res.json().hint, hint);
  }
  /** The form as GET answers it, to show a refused write changed nothing. */
  const state = async (form: string) => {
    const data = (await send('GET', `/forms/${form}`)).json().data;
    return { sections: data.sections, questions: data.questions, rules: data.rules, updatedAt: data.updatedAt };
  };

  /** Many rows at once, straight into the tables (the HTTP path would take minutes for thousands). */
  async function insertRows(form: string, rows: { questions?: object[]; sections?: object[]; rules?: object[] }): Promise<string[]> {
    const now = new Date().toISOString();
    const ids: string[] = [];
    await ctx.store.db.transaction().execute(async (trx) => {
      const count = async (table: 'form_questions' | 'form_sections' | 'form_rules') =>
        Number((await trx.selectFrom(table).select((eb) => eb.fn.countAll().as('n')).where('form_id', '=', form).executeTakeFirstOrThrow()).n);
      let at = await count('form_sections');
      for (const s of rows.sections ?? []) {
        const id = newId();
        ids.push(id);
        await trx.insertInto('form_sections').values({ id, form_id: form, title: 'S', description: null, position: at++, created_at: now, updated_at: now, ...s }).execute();
      }
      at = await count('form_questions');
      for (const q of rows.questions ?? []) {
        const id = newId();
        ids.push(id);
        await trx.insertInto('form_questions').values({
          id, form_id: form, section_id: null, question_text: 'Q', description: null, type: 'short_text', is_required: 0, is_pii: 0,
          priority: 'medium', context: null, options: '{}', position: at++, created_at: now, updated_at: now, ...q,
        }).execute();
      }
      at = await count('form_rules');
      for (const r of rows.rules ?? []) {
        const id = newId();
        ids.push(id);
        await trx.insertInto('form_rules').values({
          id, form_id: form, action: 'show', target_question_id: null, target_section_id: null, match: 'all', conditions: '[]', position: at++, created_at: now, updated_at: now, ...r,
        }).execute();
      }
      // As every writer of a form's content does: the stamp moves, so no cached draft survives it.
      const { updated_at } = await trx.selectFrom('forms').select('updated_at').where('id', '=', form).executeTakeFirstOrThrow();
      await trx.updateTable('forms').set({ updated_at: nextStamp(updated_at) }).where('id', '=', form).execute();
    });
    return ids;
  }

  describe('answers (evaluate)', () => {
    it('refuses a text answer over 10,000 characters, and all answers over 256 Ki characters, naming the answer', async () => {
      const form = await newForm();
      const text = await create(form, 'questions', { questionText: 'Essay', type: 'long_text' });
      const other = await create(form, 'questions', { questionText: 'Pick', type: 'mcq', options: { choices: ['a'], allowOther: true } });
      const address = await create(form, 'questions', { questionText: 'Where', type: 'address' });
      const evaluate = (answers: object) => send('POST', `/forms/${form}/evaluate`, { answers });
      assert.equal((await evaluate({ [text.id]: 'x'.repeat(LIMITS.answerTextLength) })).statusCode, 200, 'the limit itself is allowed');
      assert.equal((await evaluate({ [text.id]: '😀'.repeat(LIMITS.answerTextLength) })).statusCode, 200, 'characters, not UTF-16 units');
      const tooLong = new RegExp(`^answers\\.${text.id}: must be at most 10,000 characters long`);
      expectError(await evaluate({ [text.id]: 'x'.repeat(LIMITS.answerTextLength + 1) }), 400, 'validation_failed', tooLong);
      expectError(await evaluate({ [text.id]: 'İ'.repeat(500_000) }), 400, 'validation_failed', tooLong);
      expectError(await evaluate({ [other.id]: 'y'.repeat(10_001) }), 400, 'validation_failed', new RegExp(`^answers\\.${other.id}: must be at most`));
      expectError(await evaluate({ [address.id]: { city: 'z'.repeat(10_001) } }), 400, 'validation_failed', new RegExp(`^answers\\.${address.id}: must be at most`));

      // All the answers together: 27 text answers of 10,000 characters are 270,000 > 262,144.
      const many = await insertRows(form, { questions: Array.from({ length: 27 }, () => ({ type: 'long_text' })) });
      const full = Object.fromEntries(many.map((id) => [id, 'w'.repeat(10_000)]));
      expectError(await evaluate(full), 400, 'validation_failed', /^answers: hold more than 262,144 characters of text together/);
      delete full[many[0]!];
      assert.equal((await evaluate(full)).statusCode, 200, '260,000 characters are within the limit');
    });

    it('caps the text options of questions and the text of conditions', async () => {
      const form = await newForm();
      expectError(await send('POST', `/forms/${form}/questions`, { questionText: 'Q', type: 'long_text', options: { max_length: 10_001 } }), 400, 'validation_failed', /^options\.max_length: must be ≤ 10000/);
      const q = await create(form, 'questions', { questionText: 'Q', type: 'long_text', options: { max_length: 10_000 } });
      const target = await create(form, 'questions', { questionText: 'T', type: 'short_text' });
      const rule = { action: 'show', targetQuestionId: target.id, sourceQuestionId: q.id, operator: 'contains' };
      expectError(await send('POST', `/forms/${form}/rules`, { ...rule, value: 'v'.repeat(1001) }), 400, 'validation_failed', /^value: must be at most 1,000 characters long \(the longest text of a condition\)/);
      expectError(await send('POST', `/forms/${form}/rules`, { ...rule, operator: 'is_any_of', value: ['a', 'v'.repeat(1001)] }), 400, 'validation_failed', /^value: every item must be at most 1,000 characters/);
      await create(form, 'rules', { ...rule, value: 'v'.repeat(1000) });
    });
  });

  describe('contains', () => {
    it('is a case-insensitive substring test as before, non-ASCII included, however many conditions read the answer', async () => {
      const form = await newForm();
      const source = await create(form, 'questions', { questionText: 'City', type: 'long_text' });
      const needles = ['ACME', 'İstanbul', 'straße', 'ΣΟΦΙΑ', 'x'];
      const targets: Record<string, string> = {};
      for (const needle of needles) {
        const t = await create(form, 'questions', { questionText: `T ${needle}`, type: 'short_text' });
        targets[needle] = t.id;
        // Two rules per target (any of them shows it) read the same answer: the fold is shared.
        await create(form, 'rules', { action: 'show', targetQuestionId: t.id, sourceQuestionId: source.id, operator: 'contains', value: needle });
        await create(form, 'rules', { action: 'show', targetQuestionId: t.id, sourceQuestionId: source.id, operator: 'contains', value: needle });
      }
      const negated = await create(form, 'questions', { questionText: 'N', type: 'short_text' });
      await create(form, 'rules', { action: 'show', targetQuestionId: negated.id, sourceQuestionId: source.id, operator: 'not_contains', value: 'acme' });
      const shown = async (answer: string) => {
        const data = (await send('POST', `/forms/${form}/evaluate`, { answers: { [source.id]: answer } })).json().data;
        return [...needles.filter((n) => data.visibleQuestionIds.includes(targets[n])), ...(data.visibleQuestionIds.includes(negated.id) ? ['not acme'] : [])];
      };
      // What String.prototype.toLowerCase on both sides says, as before the change.
      assert.deepEqual(await shown('we are acme corp'), ['ACME']);
      assert.deepEqual(await shown('İSTANBUL office'), ['İstanbul', 'not acme'], '"İ" folds to "i̇" on both sides');
      assert.deepEqual(await shown('istanbul'), ['not acme'], 'a dotless-dot i is not "İ" folded');
      assert.deepEqual(await shown('STRASSE'), ['not acme'], 'lower case, not full case folding: ß is not ss');
      assert.deepEqual(await shown('Die Straße'), ['straße', 'not acme']);
      assert.deepEqual(await shown('σοφια'), ['ΣΟΦΙΑ', 'not acme']);
      assert.deepEqual(await shown('X'.repeat(10_000)), ['x', 'not acme']);
      assert.deepEqual(await shown('  '), ['not acme'], 'white space is no answer');
    });
  });

  describe('form size', () => {
    it('refuses the question, section and rule past the per-form counts, changing nothing', async () => {
      const form = await newForm();
      await insertRows(form, {
        sections: Array.from({ length: LIMITS.sectionsPerForm }, () => ({})),
        questions: Array.from({ length: LIMITS.questionsPerForm }, () => ({})),
      });
      const before = await state(form);
      expectError(await send('POST', `/forms/${form}/questions`, { questionText: 'One more', type: 'short_text' }), 400, 'validation_failed', /^a form holds at most 2,000 questions \(the limit of questions per form\)/);
      expectError(await send('POST', `/forms/${form}/sections`, { title: 'One more' }), 400, 'validation_failed', /^a form holds at most 200 sections \(the limit of sections per form\)/);
      const [a, b] = before.questions as Array<{ id: string }>;
      await insertRows(form, {
        rules: Array.from({ length: LIMITS.rulesPerForm }, () => ({ target_question_id: b!.id, conditions: JSON.stringify([{ sourceQuestionId: a!.id, operator: 'is_empty', value: null }]) })),
      });
      const withRules = await state(form);
      expectError(await send('POST', `/forms/${form}/rules`, { action: 'show', targetQuestionId: b!.id, sourceQuestionId: a!.id, operator: 'is_empty' }), 400, 'validation_failed', /^a form holds at most 2,000 rules/);
      assert.deepEqual(await state(form), withRules, 'nothing changed');
      // Deleting still works on a full form.
      assert.equal((await send('DELETE', `/forms/${form}/questions/${(before.questions as Array<{ id: string }>)[1999]!.id}`)).statusCode, 200);
    });

    it('refuses conditions past the per-rule and per-form counts, and text searches past theirs, changing nothing', async () => {
      const form = await newForm();
      const [text, target, other, choices] = await insertRows(form, {
        questions: [{ type: 'long_text' }, {}, { type: 'number' }, { type: 'multi_select', options: JSON.stringify({ choices: ['a', 'b'] }) }],
      });
      const search = (value: string) => ({ sourceQuestionId: text, operator: 'contains', value });
      const plain = (value: number) => ({ sourceQuestionId: other, operator: 'equals', value });
      const rulesOf = (n: number, condition: (i: number) => object) =>
        Array.from({ length: n }, () => ({ target_question_id: target, conditions: JSON.stringify(Array.from({ length: 20 }, (_, i) => ({ value: null, ...condition(i) }))) }));
      const post = (conditions: object[]) => send('POST', `/forms/${form}/rules`, { action: 'show', targetQuestionId: target, match: 'any', conditions });
      expectError(await post(Array.from({ length: 21 }, (_, i) => plain(i))), 400, 'validation_failed', /^conditions: must have at most 20 items/);

      // 80 text searches and 3,900 other conditions; then exactly 100 searches fit.
      await insertRows(form, { rules: [...rulesOf(4, (i) => search(`s${i}`)), ...rulesOf(195, plain)] });
      const atLimit = await create(form, 'rules', { action: 'show', targetQuestionId: target, match: 'any', conditions: Array.from({ length: 20 }, (_, i) => search(`t${i}`)) });
      let before = await state(form);
      expectError(await post([search('one more')]), 400, 'validation_failed', /^conditions: the form's rules would hold 101 contains\/not_contains conditions on text questions; a form holds at most 100 \(the limit of text searches per form\)/);
      assert.deepEqual(await state(form), before, 'nothing changed');
      // `contains` on a multi_select is membership, not a text search: until the question becomes text.
      await create(form, 'rules', { action: 'show', targetQuestionId: target, sourceQuestionId: choices, operator: 'contains', value: 'a' });
      before = await state(form);
      expectError(await send('PUT', `/forms/${form}/questions/${choices}`, { type: 'short_text', options: {} }), 400, 'validation_failed', /^type: the form's rules would hold 101 contains/);
      assert.deepEqual(await state(form), before, 'nothing changed');

      // Conditions of every kind: 4,001 now; 999 more reach 5,000 exactly, one more is refused.
      assert.equal((await send('PUT', `/forms/${form}/rules/${atLimit.id}`, { conditions: Array.from({ length: 20 }, (_, i) => plain(i)) })).statusCode, 200);
      await insertRows(form, { rules: [...rulesOf(49, plain), { target_question_id: target, conditions: JSON.stringify(Array.from({ length: 19 }, (_, i) => plain(i))) }] });
      before = await state(form);
      expectError(await post([plain(1)]), 400, 'validation_failed', /^conditions: the form's rules would hold 5,001 conditions together; a form holds at most 5,000 \(the limit of conditions per form\)/);
      assert.deepEqual(await state(form), before, 'nothing changed');
    });

    it('refuses a question over 64 KiB and a form over 2 MiB with 413, naming the limit, changing nothing', async () => {
      const form = await newForm();
      // 500 choices of 140 characters: about 72 KB as JSON.
      const choices = (tag: string, length = 140) => Array.from({ length: 500 }, (_, i) => `${tag}${i}`.padEnd(length, '.'));
      expectError(await send('POST', `/forms/${form}/questions`, { questionText: 'Big', type: 'mcq', options: { choices: choices('a') } }), 413, 'payload_too_large', /^The question would be [\d,]+ bytes as JSON; a question may be at most 65,536 bytes \(the question size limit\)/);
      const q = await create(form, 'questions', { questionText: 'Fits', type: 'mcq', options: { choices: choices('b', 100) } });
      const before = await state(form);
      expectError(await send('PUT', `/forms/${form}/questions/${q.id}`, { options: { choices: choices('c') } }), 413, 'payload_too_large', /the question size limit/);
      assert.deepEqual(await state(form), before);

      // Fill the form near 2 MiB with questions of about 56 KB each, written straight into the table.
      const big = JSON.stringify({ choices: choices('d', 100), allow_other: false });
      const room = Math.floor((LIMITS.formBytes - (await formBytes(ctx.store.db, form))) / (big.length + 400));
      await insertRows(form, { questions: Array.from({ length: room }, () => ({ type: 'mcq', options: big })) });
      // And one question whose text leaves 500 bytes of room.
      const gap = LIMITS.formBytes - (await formBytes(ctx.store.db, form));
      await insertRows(form, { questions: [{ question_text: 'p'.repeat(gap - 372 - 2 - 500) }] });
      assert.equal(await formBytes(ctx.store.db, form), LIMITS.formBytes - 500);
      const full = await state(form);
      expectError(await send('POST', `/forms/${form}/questions`, { questionText: 'One more', type: 'mcq', options: { choices: choices('e', 100) } }), 413, 'payload_too_large', /^The form would hold [\d,]+ bytes of questions, sections and rules as JSON; a form may hold at most 2,097,152 bytes \(the form size limit\)/);
      expectError(await send('PUT', `/forms/${form}/questions/${q.id}`, { description: 'x'.repeat(1000) }), 413, 'payload_too_large', /the form size limit/);
      assert.deepEqual(await state(form), full, 'nothing changed');
      // Small items still fit, and the measure is the size of the content as GET answers it.
      await create(form, 'questions', { questionText: 'Small', type: 'short_text' });
      const got = (await send('GET', `/forms/${form}`)).json().data;
      const json = Buffer.byteLength(JSON.stringify(got.sections)) + Buffer.byteLength(JSON.stringify(got.questions)) + Buffer.byteLength(JSON.stringify(got.rules));
      const measured = await formBytes(ctx.store.db, form);
      assert.ok(Math.abs(measured - json) / json < 0.01, `measured ${measured} vs JSON ${json}`);
    });
  });

  describe('content lists', () => {
    it('answer one page with the true total, in order, 404 for other workspaces', async () => {
      const form = await newForm();
      const ids = await insertRows(form, { questions: Array.from({ length: 45 }, (_, i) => ({ question_text: `Q${i}` })) });
      const page = (await send('GET', `/forms/${form}/questions?limit=1&page=3`)).json();
      assert.deepEqual(page.meta, { total: 45, page: 3, limit: 1 });
      assert.deepEqual(page.data.map((q: { id: string; order: number; questionText: string }) => [q.id, q.order, q.questionText]), [[ids[2], 2, 'Q2']]);
      const last = (await send('GET', `/forms/${form}/questions?limit=20&page=3`)).json();
      assert.deepEqual(last.data.map((q: { id: string }) => q.id), ids.slice(40));
      assert.deepEqual((await send('GET', `/forms/${form}/questions?page=9`)).json(), { success: true, data: [], meta: { total: 45, page: 9, limit: 20 } });
      assert.deepEqual((await send('GET', `/forms/${form}`)).json().data.questions.slice(0, 20), (await send('GET', `/forms/${form}/questions`)).json().data, 'the same objects as the whole form');
      const sections = (await send('GET', `/forms/${form}/sections`)).json();
      assert.deepEqual(sections, { success: true, data: [], meta: { total: 0, page: 1, limit: 20 } });
      const stranger = bearer(await ctx.key(['forms:read']));
      for (const kind of ['questions', 'sections', 'rules']) {
        const res = await ctx.app.inject({ method: 'GET', url: `/api/v1/forms/${form}/${kind}`, headers: stranger });
        assert.equal(res.statusCode, 404);
        assert.equal(res.json().hint, 'Form not found');
      }
      assert.equal((await send('DELETE', `/forms/${form}`)).statusCode, 200);
      assert.equal((await send('GET', `/forms/${form}/rules`)).statusCode, 404, 'a deleted form has no lists');
    });
  });
});

describe('revision storage budget per workspace', () => {
  let ctx: TestContext;
  let headers: Record<string, string>;
  const budget = 40_000;

  before(async () => {
    ctx = await createTestContext({ revisionBytesPerWorkspace: budget });
    headers = bearer(await ctx.key(['forms:read', 'forms:write', 'forms:delete', 'revisions:read'], 'budget'));
  });
  after(() => ctx.close());

  const send = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown) =>
    ctx.app.inject({ method, url: `/api/v1${url}`, headers, ...(payload === undefined ? {} : { payload: payload as object }) });

  it('refuses a publish past the budget with 413, changing nothing; deleting a form for good frees its revisions', async () => {
    const used = async () => Number((await ctx.store.db.selectFrom('workspaces').select('revision_bytes').where('slug', '=', 'budget').executeTakeFirstOrThrow()).revision_bytes);
    const form = (await send('POST', '/forms', { title: 'Budget' })).json().data.id;
    await send('POST', `/forms/${form}/questions`, { questionText: 'Pick', type: 'mcq', options: { choices: Array.from({ length: 100 }, (_, i) => `choice ${i}`.padEnd(60, '.')) } });
    let published = 0;
    let refused: { statusCode: number; json(): { code: string; hint: string } } | undefined;
    for (let i = 0; i < 20 && !refused; i++) {
      await send('PUT', `/forms/${form}`, { title: `Budget ${i}` });
      const res = await send('POST', `/forms/${form}/publish`);
      if (res.statusCode === 201) published++;
      else refused = res;
    }
    assert.ok(refused, 'the budget was reached');
    assert.ok(published >= 2, `published ${published} times first`);
    assert.equal(refused.statusCode, 413);
    assert.equal(refused.json().code, 'payload_too_large');
    assert.match(refused.json().hint, /^Publishing would store a [\d,]+-byte snapshot; this workspace stores [\d,]+ bytes of revisions and may store at most 40,000 \(the revision storage budget per workspace\)/);
    const stored = await ctx.store.db.selectFrom('form_revisions').select((eb) => eb.fn.sum<number | string>(eb.fn('octet_length', ['snapshot'])).as('n')).executeTakeFirstOrThrow();
    assert.equal(await used(), Number(stored.n), 'the counter is the bytes stored');
    assert.ok((await used()) <= budget);
    const after = (await send('GET', `/forms/${form}`)).json().data;
    assert.equal(after.currentVersion, published, 'no revision was added');
    assert.equal(after.hasUnpublishedChanges, true, 'the draft still has its changes');
    assert.equal((await send('PUT', `/forms/${form}`, { status: 'published' })).statusCode, 413, 'publishing through PUT is held to it too');

    // Another form of the workspace shares the budget; deleting the first for good frees it.
    const second = (await send('POST', '/forms', { title: 'Second' })).json().data.id;
    await send('POST', `/forms/${second}/questions`, { questionText: 'Pick', type: 'mcq', options: { choices: Array.from({ length: 100 }, (_, i) => `choice ${i}`.padEnd(60, '.')) } });
    assert.equal((await send('POST', `/forms/${second}/publish`)).statusCode, 413);
    assert.equal((await send('DELETE', `/forms/${form}`)).statusCode, 200);
    assert.equal((await send('POST', `/forms/${second}/publish`)).statusCode, 413, 'a soft-deleted form keeps its revisions');
    assert.equal((await send('DELETE', `/forms/${form}?permanent=true`)).statusCode, 200);
    assert.equal(await used(), 0);
    assert.equal((await send('POST', `/forms/${second}/publish`)).statusCode, 201);
    assert.ok((await used()) > 0);
  });
});
