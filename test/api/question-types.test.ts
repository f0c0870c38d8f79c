import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { sql } from 'kysely';
import { bearer, createTestContext, type TestContext } from '../helpers/context.js';
import { QUESTION_TYPES } from '../../src/domain/questions.js';
import { migrate } from '../../src/store/migrations.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

describe('question types: answers, calculations, settings, OpenAPI, stored options of earlier versions', () => {
  let ctx: TestContext;
  let headers: Record<string, string>;

  before(async () => {
    ctx = await createTestContext();
    headers = bearer(await ctx.key(['forms:read', 'forms:write', 'forms:delete', 'revisions:read'], 'types'));
  });
  after(() => ctx.close());

  const send = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown, h = headers) =>
    ctx.app.inject({ method, url: `/api/v1${url}`, headers: h, ...(payload === undefined ? {} : { payload: payload as object }) });
  async function newForm(): Promise<string> {
    return (await send('POST', '/forms', { title: 'Types' })).json().data.id;
  }
  async function question(form: string, body: object): Promise<{ id: string } & Record<string, unknown>> {
    const res = await send('POST', `/forms/${form}/questions`, body);
    assert.equal(res.statusCode, 201, res.body);
    return res.json().data;
  }
  function refused(res: { statusCode: number; body: string; json(): { code: string; hint: string } }, hint: RegExp, code = 'validation_failed') {
    assert.equal(res.statusCode, 400, res.body);
    assert.equal(res.json().code, code);
    assert.match(res.json().hint, hint);
  }

  it('address answers have the keys of its address_fields', async () => {
    const form = await newForm();
    const home = await question(form, { questionText: 'Home', type: 'address', isRequired: true });
    const short = await question(form, { questionText: 'Office', type: 'address', options: { addressFields: ['street', 'city'] } });
    const evaluate = (answers: object) => send('POST', `/forms/${form}/evaluate`, { answers });
    const ok = await evaluate({ [home.id]: { street: '1 Main St', city: 'Springfield', state: 'IL', zip: '62701', country: 'US' }, [short.id]: { street: '2 High St' } });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.deepEqual(ok.json().data.missingRequiredQuestionIds, []);
    refused(await evaluate({ [home.id]: { line1: '1 Main St' } }), new RegExp(`answers\\.${home.id}: has the key "line1", which is not one of its address_fields \\(street, city, state, zip, country\\)`));
    refused(await evaluate({ [short.id]: { street: 'x', street2: 'y' } }), /has the key "street2", which is not one of its address_fields \(street, city\)/);
    refused(await evaluate({ [home.id]: { street: 5 } }), /has "street" that is not a string/);
    refused(await evaluate({ [home.id]: '1 Main St' }), /must be an object with the keys of its address_fields/);
    assert.deepEqual((await evaluate({})).json().data.missingRequiredQuestionIds, [home.id]);
  });

  it('a ranking answer orders every choice once; a matrix answer of several columns has an array in each row', async () => {
    const form = await newForm();
    const rank = await question(form, { questionText: 'Rank', type: 'ranking', options: { choices: ['a', 'b', 'c'] } });
    const grid = await question(form, { questionText: 'Grid', type: 'matrix', options: { rows: ['r1', 'r2'], columns: ['c1', 'c2'], allow_multiple: true } });
    const single = await question(form, { questionText: 'One each', type: 'matrix', options: { rows: ['r1'], columns: ['c1', 'c2'] } });
    const evaluate = (answers: object) => send('POST', `/forms/${form}/evaluate`, { answers });
    const ok = await evaluate({ [rank.id]: ['c', 'a', 'b'], [grid.id]: { r1: ['c1', 'c2'], r2: [] }, [single.id]: { r1: 'c2' } });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.equal((await evaluate({ [rank.id]: [] })).statusCode, 200, 'an empty ranking is no answer');
    for (const partial of [['b'], ['a', 'b'], ['a', 'a', 'b'], ['a', 'b', 'c', 'd']]) {
      refused(await evaluate({ [rank.id]: partial }), new RegExp(`answers\\.${rank.id}: must be an array of all 3 choices, each once, in ranked order`));
    }
    refused(await evaluate({ [grid.id]: { r1: 'c1' } }), /has a value for "r1" that is not an array of columns/);
    refused(await evaluate({ [grid.id]: { r1: ['c1', 'c1'] } }), /names a column twice for "r1"/);
    refused(await evaluate({ [single.id]: { r1: ['c1'] } }), /has a value for "r1" that is not one of the columns/);
  });

  it('calculations refer to questions by id or by text; evaluate works their values out; rules can use them', async () => {
    const form = await newForm();
    const quantity = await question(form, { questionText: 'Quantity', type: 'number' });
    const price = await question(form, { questionText: 'Unit price', type: 'currency' });
    const express = await question(form, { questionText: 'Express?', type: 'yes_no' });
    const total = await question(form, { questionText: 'Total', type: 'calculation', isRequired: true, options: { formula: `{{Quantity}} * {{${price.id}}} / 3`, decimalPlaces: 1 } });
    const discount = await question(form, { questionText: 'Discount code', type: 'short_text' });
    assert.deepEqual(total.options, { formula: `{{Quantity}} * {{${price.id}}} / 3`, decimal_places: 1 });
    // Discount shows when the total is over 100; the unit price only for express orders.
    assert.equal((await send('POST', `/forms/${form}/rules`, { action: 'show', targetQuestionId: discount.id, sourceQuestionId: total.id, operator: 'greater_than', value: 100 })).statusCode, 201);
    assert.equal((await send('POST', `/forms/${form}/rules`, { action: 'show', targetQuestionId: price.id, sourceQuestionId: express.id, operator: 'equals', value: true })).statusCode, 201);
    const evaluate = async (answers: object) => {
      const res = await send('POST', `/forms/${form}/evaluate`, { answers });
      assert.equal(res.statusCode, 200, res.body);
      return res.json().data as { visibleQuestionIds: string[]; missingRequiredQuestionIds: string[] };
    };
    const big = await evaluate({ [quantity.id]: 10, [price.id]: 33, [express.id]: true });
    assert.ok(big.visibleQuestionIds.includes(discount.id), '10 × 33 / 3 = 110 > 100');
    assert.deepEqual(big.missingRequiredQuestionIds, []);
    const small = await evaluate({ [quantity.id]: 9, [price.id]: 33, [express.id]: true });
    assert.ok(!small.visibleQuestionIds.includes(discount.id), '99 is not over 100');
    // A hidden reference counts as empty (0): the price is hidden without express.
    const hidden = await evaluate({ [quantity.id]: 10, [price.id]: 33, [express.id]: false });
    assert.ok(!hidden.visibleQuestionIds.includes(discount.id));
    // No reference answered: the calculation is empty, so a required one is missing.
    assert.deepEqual((await evaluate({})).missingRequiredQuestionIds, [total.id]);
    // A calculation takes no answer.
    refused(await send('POST', `/forms/${form}/evaluate`, { answers: { [total.id]: 500 } }), new RegExp(`answers\\.${total.id}: must be null: it is calculated`));
    // A rule that would make a reference depend on the calculation is a loop.
    refused(
      await send('POST', `/forms/${form}/rules`, { action: 'show', targetQuestionId: quantity.id, sourceQuestionId: total.id, operator: 'greater_than', value: 1 }),
      /These rules make visibility depend on itself|cannot decide its own visibility/,
      'rule_cycle',
    );

    // Renaming a question a formula names by text is refused; the formula keeps naming it.
    refused(await send('PUT', `/forms/${form}/questions/${quantity.id}`, { questionText: 'Qty' }), new RegExp(`questionText: the formula of calculation ${total.id} uses this question and would break: it refers to \\{\\{Quantity\\}\\}, which is not a question of this form`));
    // Renaming one it names by id is fine.
    assert.equal((await send('PUT', `/forms/${form}/questions/${price.id}`, { questionText: 'Price each' })).statusCode, 200);
    // A second question with a text a formula names would make the reference ambiguous.
    refused(await send('POST', `/forms/${form}/questions`, { questionText: 'Quantity', type: 'number' }), /questionText: the formula of calculation .* refers to \{\{Quantity\}\}, which names 2 questions/);
    // Retyping or deleting a referenced question is refused.
    refused(await send('PUT', `/forms/${form}/questions/${quantity.id}`, { type: 'short_text' }), /type: the formula of calculation .* refers to a short_text question/);
    refused(await send('DELETE', `/forms/${form}/questions/${quantity.id}`), /the formula of calculation .* is not a question of this form/);
    // Retyping to another number-like type keeps the formula working.
    assert.equal((await send('PUT', `/forms/${form}/questions/${quantity.id}`, { type: 'slider', options: { maxValue: 1000 } })).statusCode, 200);
    // After the formula refers to it by id, the rename goes through.
    assert.equal((await send('PUT', `/forms/${form}/questions/${total.id}`, { options: { formula: `{{${quantity.id}}} * {{${price.id}}} / 3`, decimal_places: 1 } })).statusCode, 200);
    assert.equal((await send('PUT', `/forms/${form}/questions/${quantity.id}`, { questionText: 'Qty' })).statusCode, 200);
    assert.ok((await evaluate({ [quantity.id]: 10, [price.id]: 33, [express.id]: true })).visibleQuestionIds.includes(discount.id));
    // A calculation cannot refer to itself or to another calculation.
    refused(await send('PUT', `/forms/${form}/questions/${total.id}`, { options: { formula: '{{Total}} + 1' } }), /refers to a calculation question \(\{\{Total\}\}\)/);
  });

  it('quiz options follow the choices: a choice change that drops a correct answer is refused', async () => {
    const form = await newForm();
    const q = await question(form, { questionText: 'Capital of France?', type: 'mcq', options: { choices: ['Paris', 'Lyon'], correctAnswers: ['Paris'], correctAnswerPoints: 5 } });
    assert.deepEqual(q.options, { choices: ['Paris', 'Lyon'], allow_other: false, correct_answers: ['Paris'], correct_answer_points: 5 });
    refused(await send('PUT', `/forms/${form}/questions/${q.id}`, { options: { choices: ['Lyon', 'Nice'], correct_answers: ['Paris'] } }), /options\.correct_answers\[0\]: "Paris" is not one of the question's choices \("Lyon", "Nice"\)/);
    // The rules that use a question are checked again when its options change.
    const t = await question(form, { questionText: 'Why?', type: 'short_text' });
    assert.equal((await send('POST', `/forms/${form}/rules`, { action: 'show', targetQuestionId: t.id, sourceQuestionId: q.id, operator: 'equals', value: 'Lyon' })).statusCode, 201);
    refused(await send('PUT', `/forms/${form}/questions/${q.id}`, { options: { choices: ['Paris', 'Nice'] } }), /options: rule .* uses this question and would no longer fit/);
  });

  it('PUT /forms/{id}/settings merges top-level keys, kept as given; null removes a key', async () => {
    const form = (await send('POST', '/forms', { title: 'S', settings: { theme: 'dark', show_progress: true } })).json().data.id;
    await send('POST', `/forms/${form}/publish`);
    const merged = await send('PUT', `/forms/${form}/settings`, { redirect_url: 'https://example.com/thanks', theme: null, quiz: { showScore: true } });
    assert.equal(merged.statusCode, 200, merged.body);
    assert.deepEqual(merged.json().data.settings, { show_progress: true, redirect_url: 'https://example.com/thanks', quiz: { showScore: true } }, 'keys kept exactly as written');
    assert.equal(merged.json().data.hasUnpublishedChanges, true);
    assert.deepEqual((await send('GET', `/forms/${form}`)).json().data.settings, merged.json().data.settings);
    // Concurrent merges of different keys all land (merged under the form's lock).
    await Promise.all(Array.from({ length: 8 }, (_, i) => send('PUT', `/forms/${form}/settings`, { [`k${i}`]: i })));
    const settings = (await send('GET', `/forms/${form}`)).json().data.settings;
    for (let i = 0; i < 8; i++) assert.equal(settings[`k${i}`], i);
    // Both spellings are different keys here: settings are free JSON.
    assert.equal((await send('PUT', `/forms/${form}/settings`, { a_b: 1, aB: 2 })).json().data.settings.aB, 2);
    const proto = await ctx.app.inject({ method: 'PUT', url: `/api/v1/forms/${form}/settings`, headers: { ...headers, 'content-type': 'application/json' }, payload: '{"__proto__":{"x":1}}' });
    assert.equal(proto.statusCode, 400, 'a __proto__ key is refused, as in every body');
    // Bad bodies change nothing.
    const before = (await send('GET', `/forms/${form}`)).json().data;
    refused(await send("PUT", `/forms/${form}/settings`, [1, 2]), /body: must be an object/);
    refused(await send('PUT', `/forms/${form}/settings`, { big: 'x'.repeat(64 * 1024) }), /settings: would be \d+ bytes as JSON after the merge; settings hold at most 65536 bytes/);
    refused(await send('PUT', `/forms/${form}/settings`, { deep: JSON.parse(`${'['.repeat(40)}${']'.repeat(40)}`) }), /nested more than 32 levels/);
    refused(await send('PUT', `/forms/${form}/settings?x=1`, {}), /x/);
    assert.deepEqual((await send('GET', `/forms/${form}`)).json().data, before);
    // The same grant, 404 and archived rules as PUT /forms/{id}.
    const readOnly = bearer(await ctx.key(['forms:read'], 'types'));
    assert.equal((await send('PUT', `/forms/${form}/settings`, { a: 1 }, readOnly)).statusCode, 403);
    const stranger = bearer(await ctx.key(['forms:read', 'forms:write']));
    assert.equal((await send('PUT', `/forms/${form}/settings`, { a: 1 }, stranger)).statusCode, 404);
    assert.equal((await send('PUT', '/forms/not-an-id/settings', { a: 1 })).statusCode, 404);
    assert.equal((await send('PUT', `/forms/${form}`, { status: 'archived' })).statusCode, 200);
    const archived = await send('PUT', `/forms/${form}/settings`, { a: 1 });
    assert.equal(archived.statusCode, 409);
    assert.equal(archived.json().code, 'form_not_editable');
  });

  it('OpenAPI documents the options per type: Question and CreateQuestion are a oneOf discriminated by type, and real answers fit them', async () => {
    const spec = (await ctx.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    const schemas = spec.components.schemas;
    assert.deepEqual(Object.keys(schemas.Question.discriminator.mapping).sort(), [...QUESTION_TYPES].sort());
    assert.equal(schemas.Question.oneOf.length, QUESTION_TYPES.length);
    assert.deepEqual(schemas.RatingOptions.properties.min, { enum: [0, 1], default: 1 });
    assert.deepEqual(schemas.AddressOptions.properties.address_fields.items, { enum: ['street', 'street2', 'city', 'state', 'zip', 'country'] });
    assert.ok(schemas.McqOptions.properties.correct_answers, 'quiz options are documented');
    const create = spec.paths['/api/v1/forms/{id}/questions'].post;
    assert.deepEqual(create.requestBody.content['application/json'].schema, { $ref: '#/components/schemas/CreateQuestion' });
    assert.deepEqual(create.responses['201'].content['application/json'].schema.properties.data, { $ref: '#/components/schemas/Question' });
    assert.deepEqual(spec.paths['/api/v1/forms/{id}/questions/{qid}'].put.requestBody.content['application/json'].schema.properties.options, { $ref: '#/components/schemas/QuestionOptions' });
    assert.ok(spec.paths['/api/v1/forms/{id}/settings'].put.requestBody);

    // The document is valid JSON Schema 2020-12 where it holds schemas (ajv compiles every
    // component with OpenAPI's discriminator), and what the API answers fits it.
    const ajv = new Ajv2020({ strict: false, discriminator: true, allErrors: true });
    addFormats(ajv);
    const withoutMapping = JSON.parse(JSON.stringify(spec.components), (key, value) => (key === 'mapping' ? undefined : value));
    ajv.addSchema({ $id: 'openapi', components: withoutMapping });
    for (const name of Object.keys(schemas)) assert.doesNotThrow(() => ajv.getSchema(`openapi#/components/schemas/${name}`), name);
    const validQuestion = ajv.getSchema('openapi#/components/schemas/Question')!;
    const validCreate = ajv.getSchema('openapi#/components/schemas/CreateQuestion')!;
    const form = await newForm();
    const number = await question(form, { questionText: 'N', type: 'number' });
    const bodies: object[] = QUESTION_TYPES.map((type) => ({
      questionText: `Q ${type}`,
      type,
      options: {
        mcq: { choices: ['A'] }, dropdown: { choices: ['A'] }, multi_select: { choices: ['A'] }, ranking: { choices: ['A', 'B'] },
        picture_choice: { picture_choices: [{ label: 'A', image_url: 'https://example.com/a.png' }] }, matrix: { rows: ['r'], columns: ['c'] },
        calculation: { formula: `{{${number.id}}} * 2` }, payment: { amount: 500 },
      }[type as string] ?? {},
    }));
    for (const body of bodies) {
      assert.ok(validCreate(body), `${JSON.stringify(body)} fits CreateQuestion: ${ajv.errorsText(validCreate.errors)}`);
      const created = await question(form, body);
      assert.ok(validQuestion(created), `${created.type} fits Question: ${ajv.errorsText(validQuestion.errors)}`);
    }
    assert.ok(!validCreate({ questionText: 'x', type: 'rating', options: { max: 11 } }), 'the document states the ranges too');
    assert.ok(!validCreate({ questionText: 'x', type: 'mcq' }), 'and what is required');
  });

  it('migration 0009 converts stored address questions; revisions published before it are served and evaluated in the new shape, unchanged in the database', async () => {
    const form = await newForm();
    const address = await question(form, { questionText: 'Where?', type: 'address' });
    const rating = await question(form, { questionText: 'Rate', type: 'rating' });
    const published = await send('POST', `/forms/${form}/publish`);
    assert.equal(published.statusCode, 201, published.body);
    // Put the stored rows back the way earlier versions wrote them, and forget 0009 ran.
    const old = JSON.stringify({ fields: ['line1', 'city', 'postal_code', 'country'] });
    const db = ctx.store.db;
    await db.updateTable('form_questions').set({ options: old }).where('id', '=', address.id).execute();
    await db.updateTable('form_questions').set({ options: JSON.stringify({ max: 5, icon: 'star' }) }).where('id', '=', rating.id).execute();
    const revision = await db.selectFrom('form_revisions').select(['id', 'snapshot']).where('form_id', '=', form).executeTakeFirstOrThrow();
    const oldSnapshot = revision.snapshot.replace(JSON.stringify({ address_fields: ['street', 'city', 'state', 'zip', 'country'] }), old);
    assert.notEqual(oldSnapshot, revision.snapshot);
    await db.updateTable('form_revisions').set({ snapshot: oldSnapshot }).where('id', '=', revision.id).execute();
    await sql`delete from schema_migrations where id = '0009_question_options'`.execute(db);

    assert.deepEqual(await migrate(ctx.store), ['0009_question_options']);
    const questions = (await send('GET', `/forms/${form}`)).json().data.questions;
    assert.deepEqual(questions[0].options, { address_fields: ['street', 'city', 'zip', 'country'] });
    assert.deepEqual(questions[1].options, { max: 5, icon: 'star', min: 1 }, 'a new option with a default is filled in');
    // The revision is not rewritten, but served and evaluated in today's shape.
    assert.equal((await db.selectFrom('form_revisions').select('snapshot').where('id', '=', revision.id).executeTakeFirstOrThrow()).snapshot, oldSnapshot);
    const servedRes = await send("GET", `/forms/${form}/revisions/1`);
    assert.equal(servedRes.statusCode, 200, servedRes.body);
    const served = servedRes.json().data.snapshot;
    assert.deepEqual(served.questions[0].options, { address_fields: ['street', 'city', 'zip', 'country'] });
    const evaluated = await send('POST', `/forms/${form}/evaluate`, { version: 1, answers: { [address.id]: { street: '1 Main St', zip: '12345' } } });
    assert.equal(evaluated.statusCode, 200, evaluated.body);
    refused(await send('POST', `/forms/${form}/evaluate`, { version: 1, answers: { [address.id]: { line1: '1 Main St' } } }), /has the key "line1"/);
  });
});
