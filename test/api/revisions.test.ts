import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { journal, sweepBlobJournal, unreferenced } from '../../src/store/blob-locks.js';
import { bearer, createTestContext, type TestContext } from '../helpers/context.js';
import { makePdf, multipart } from '../helpers/files.js';
import { nextStamp } from '../../src/store/live.js';

const ALL = ['forms:read', 'forms:write', 'forms:delete', 'documents:read', 'documents:write', 'documents:delete', 'revisions:read'];
const box = { pageNumber: 1, x: 0.1, y: 0.1, width: 0.2, height: 0.05 };

describe('publishing and revisions', () => {
  let ctx: TestContext;
  let headers: Record<string, string>;
  let pdf: Buffer;

  before(async () => {
    ctx = await createTestContext();
    headers = bearer(await ctx.key(ALL, 'revisions'));
    pdf = await makePdf([{ width: 612, height: 792 }, { width: 612, height: 792 }]);
  });
  after(() => ctx.close());

  const send = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown, h = headers) =>
    ctx.app.inject({ method, url: `/api/v1${url}`, headers: h, ...(payload === undefined ? {} : { payload: payload as object }) });
  async function ok<T = Record<string, any>>(res: Promise<{ statusCode: number; body: string; json(): any }>, status = 200): Promise<T> {
    const r = await res;
    assert.equal(r.statusCode, status, r.body);
    return r.json().data as T;
  }
  async function fails(res: Promise<{ statusCode: number; body: string; json(): any }>, status: number, code: string, hint?: RegExp) {
    const r = await res;
    assert.equal(r.statusCode, status, r.body);
    assert.equal(r.json().code, code);
    if (hint) assert.match(r.json().hint, hint);
  }
  async function stored(sha256: string): Promise<boolean> {
    return (await ctx.storedBlobs()).includes(sha256);
  }
  async function newForm(h = headers): Promise<string> {
    return (await ok(send('POST', '/forms', { title: 'Intake' }, h), 201)).id;
  }
  async function newDocument(h = headers, data = pdf): Promise<string> {
    const body = multipart([{ name: 'file', data, filename: 'contract.pdf' }]);
    return (await ok(ctx.app.inject({ method: 'POST', url: '/api/v1/documents', headers: { ...h, ...body.headers }, payload: body.payload }), 201)).id;
  }

  it('publishes a form: snapshot, version, status; an old revision stays byte for byte while the draft moves on', async () => {
    const form = await newForm();
    const section = await ok(send('POST', `/forms/${form}/sections`, { title: 'Company' }), 201);
    const plan = await ok(send('POST', `/forms/${form}/questions`, { questionText: 'Plan', type: 'dropdown', options: { choices: ['Free', 'Pro'] }, sectionId: section.id }), 201);
    const vat = await ok(send('POST', `/forms/${form}/questions`, { questionText: 'VAT number', type: 'short_text', isRequired: true }), 201);
    await ok(send('POST', `/forms/${form}/rules`, { sourceQuestionId: plan.id, operator: 'equals', value: 'Pro', action: 'show', targetQuestionId: vat.id }), 201);
    const draft = await ok(send('GET', `/forms/${form}`));

    const res = await send('POST', `/forms/${form}/publish`);
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(res.headers.location, `/api/v1/forms/${form}/revisions/1`);
    const { form: published, revision } = res.json().data;
    assert.equal(published.status, 'published');
    assert.equal(published.currentVersion, 1);
    assert.equal(published.hasUnpublishedChanges, false);
    assert.deepEqual(Object.keys(revision).sort(), ['changesSummary', 'formId', 'id', 'publishedAt', 'publishedBy', 'version']);
    assert.equal(revision.formId, form);
    assert.equal(revision.version, 1);
    assert.equal(revision.changesSummary, 'First version: +2 questions, +1 section, +1 rule');
    const keyId = (await ctx.store.db.selectFrom('api_keys').innerJoin('workspaces', 'workspaces.id', 'api_keys.workspace_id').select('api_keys.id').where('workspaces.slug', '=', 'revisions').executeTakeFirstOrThrow()).id;
    assert.equal(revision.publishedBy, keyId);
    assert.deepEqual(await ok(send('GET', `/forms/${form}`)), { ...draft, ...published }, 'the form reads back as published');

    const first = await send('GET', `/forms/${form}/revisions/1`);
    assert.equal(first.statusCode, 200);
    assert.match(first.headers['content-type'] as string, /^application\/json/);
    const one = first.json().data;
    assert.deepEqual({ ...one, snapshot: undefined }, { ...revision, snapshot: undefined });
    assert.deepEqual(one.snapshot, { form: published, sections: draft.sections, questions: draft.questions, rules: draft.rules });

    // Edit: a new question, the rule now on "Free", a new title. Then publish with a summary.
    await ok(send('POST', `/forms/${form}/questions`, { questionText: 'Email', type: 'email', order: 0 }), 201);
    const rule = draft.rules[0];
    await ok(send('PUT', `/forms/${form}/rules/${rule.id}`, { conditions: [{ sourceQuestionId: plan.id, operator: 'equals', value: 'Free' }] }));
    const edited = await ok(send('PUT', `/forms/${form}`, { title: 'Intake v2' }));
    assert.equal(edited.hasUnpublishedChanges, true);
    assert.equal(edited.status, 'published');
    const second = await ok(send('POST', `/forms/${form}/publish`, { changes_summary: '  Asks for an email first.  ' }), 201);
    assert.equal(second.revision.version, 2);
    assert.equal(second.revision.changesSummary, 'Asks for an email first.');
    assert.equal(second.form.title, 'Intake v2');

    // And once more, with the summary generated from the diff.
    await ok(send('DELETE', `/forms/${form}/sections/${section.id}`));
    const third = await ok(send('PUT', `/forms/${form}`, { status: 'published' }));
    assert.equal(third.currentVersion, 3);
    const list = await send('GET', `/forms/${form}/revisions`);
    assert.deepEqual(list.json().meta, { total: 3, page: 1, limit: 20 });
    assert.deepEqual(list.json().data.map((r: { version: number }) => r.version), [3, 2, 1]);
    assert.equal(list.json().data[0].changesSummary, '1 question moved, -1 section');
    assert.equal(list.json().data[1].changesSummary, 'Asks for an email first.');
    assert.ok(list.json().data.every((r: object) => !('snapshot' in r)));

    const again = await send('GET', `/forms/${form}/revisions/1`);
    assert.equal(again.body, first.body, 'revision 1 is unchanged byte for byte');
    const v2 = (await ok(send('GET', `/forms/${form}/revisions/2`))).snapshot;
    assert.equal(v2.questions.length, 3);
    assert.equal(v2.questions[0].questionText, 'Email');
    assert.equal(v2.rules[0].conditions[0].value, 'Free');
  });

  it('no_changes: nothing edited, or an edit undone; PUT published with nothing to publish answers 200', async () => {
    const form = await newForm();
    await ok(send('POST', `/forms/${form}/publish`), 201);
    await fails(send('POST', `/forms/${form}/publish`), 409, 'no_changes', /Nothing changed since the last revision/);
    await ok(send('PUT', `/forms/${form}`, { title: 'Other' }));
    await ok(send('PUT', `/forms/${form}`, { title: 'Intake' }));
    assert.equal((await ok(send('GET', `/forms/${form}`))).hasUnpublishedChanges, true);
    await fails(send('POST', `/forms/${form}/publish`), 409, 'no_changes');
    assert.equal((await ok(send('GET', `/forms/${form}`))).hasUnpublishedChanges, false, 'the draft equals its revision again');
    await ok(send('PUT', `/forms/${form}`, { description: 'x' }));
    await ok(send('PUT', `/forms/${form}`, { description: null }));
    const kept = await ok(send('PUT', `/forms/${form}`, { status: 'published' }));
    assert.equal(kept.currentVersion, 1);
    assert.equal(kept.hasUnpublishedChanges, false);
    // An empty body with a JSON content type is no body.
    const empty = await ctx.app.inject({ method: 'POST', url: `/api/v1/forms/${form}/publish`, headers: { ...headers, 'content-type': 'application/json' }, payload: '' });
    assert.equal(empty.statusCode, 409, empty.body);
    assert.equal(empty.json().code, 'no_changes');
    // Other keys and the publish in one PUT: applied, then published.
    const both = await ok(send('PUT', `/forms/${form}`, { title: 'Renamed', status: 'published' }));
    assert.deepEqual([both.title, both.currentVersion, both.hasUnpublishedChanges], ['Renamed', 2, false]);
    assert.equal((await ok(send('GET', `/forms/${form}/revisions/2`))).changesSummary, 'title changed');
    assert.equal((await send('GET', `/forms/${form}/revisions`)).json().meta.total, 2);
    // A real change publishes.
    await ok(send('POST', `/forms/${form}/questions`, { questionText: 'Name', type: 'short_text' }), 201);
    assert.equal((await ok(send('POST', `/forms/${form}/publish`), 201)).revision.changesSummary, '+1 question');
  });

  it('refuses bad publish bodies and bad versions', async () => {
    const form = await newForm();
    await fails(send('POST', `/forms/${form}/publish`, { changesSummary: '   ' }), 400, 'validation_failed', /changesSummary/);
    await fails(send('POST', `/forms/${form}/publish`, { changesSummary: 'x'.repeat(1001) }), 400, 'validation_failed');
    await fails(send('POST', `/forms/${form}/publish`, { changesSummary: 3 }), 400, 'validation_failed');
    await fails(send('POST', `/forms/${form}/publish`, { summary: 'x' }), 400, 'validation_failed', /summary/);
    assert.equal((await send('GET', `/forms/${form}/revisions`)).json().meta.total, 0, 'nothing published by a refused request');
    const generated = await ok(send('POST', `/forms/${form}/publish`, { changesSummary: null }), 201);
    assert.equal(generated.revision.changesSummary, 'First version');
    for (const version of ['0', '-1', '01', '1.0', 'abc', '2', '1e0', '99999999999', '2147483648']) {
      await fails(send('GET', `/forms/${form}/revisions/${version}`), 404, 'not_found', /Revision not found/);
    }
    await fails(send('GET', `/forms/${form}/revisions?page=0`), 400, 'invalid_pagination');
    await fails(send('GET', `/forms/${form}/revisions?foo=1`), 400, 'validation_failed');
    const page2 = await send('GET', `/forms/${form}/revisions?page=2&limit=1`);
    assert.deepEqual(page2.json(), { success: true, data: [], meta: { total: 1, page: 2, limit: 1 } });
  });

  it('evaluates against a revision: an old version differs from the draft where the rules changed', async () => {
    const form = await newForm();
    const age = await ok(send('POST', `/forms/${form}/questions`, { questionText: 'Age', type: 'number' }), 201);
    const guardian = await ok(send('POST', `/forms/${form}/questions`, { questionText: 'Guardian', type: 'short_text', isRequired: true }), 201);
    const rule = await ok(send('POST', `/forms/${form}/rules`, { sourceQuestionId: age.id, operator: 'less_than', value: 18, action: 'show', targetQuestionId: guardian.id }), 201);
    await ok(send('POST', `/forms/${form}/publish`), 201);
    await ok(send('PUT', `/forms/${form}/rules/${rule.id}`, { conditions: [{ sourceQuestionId: age.id, operator: 'less_than', value: 16 }] }));
    const evaluate = (body: object) => send('POST', `/forms/${form}/evaluate`, body);
    const answers = { [age.id]: 17 };
    const v1 = await ok(evaluate({ answers, version: 1 }));
    const draft = await ok(evaluate({ answers }));
    assert.deepEqual(v1.visibleQuestionIds, [age.id, guardian.id]);
    assert.deepEqual(v1.missingRequiredQuestionIds, [guardian.id]);
    assert.deepEqual(draft.visibleQuestionIds, [age.id]);
    assert.deepEqual(draft.missingRequiredQuestionIds, []);
    // Twice more: the compiled revision is kept, and answers the same.
    assert.deepEqual(await ok(evaluate({ answers, version: 1 })), v1);
    // Answers are checked against the revision's questions.
    const added = await ok(send('POST', `/forms/${form}/questions`, { questionText: 'New', type: 'short_text' }), 201);
    await fails(evaluate({ answers: { [added.id]: 'x' }, version: 1 }), 400, 'validation_failed', new RegExp(added.id));
    await fails(evaluate({ answers: { [age.id]: 'seventeen' }, version: 1 }), 400, 'validation_failed', new RegExp(age.id));
    for (const version of [2, 0, -1, 1.5, 2147483648, 1e300]) await fails(evaluate({ answers, version }), 404, 'not_found', /Revision not found/);
    await fails(evaluate({ answers, version: '1' }), 400, 'validation_failed');
  });

  it('20 concurrent publishes interleaved with edits give versions 1..n exactly', async () => {
    const form = await newForm();
    // Started a few milliseconds apart, so that they overlap one another's phases (a publish works
    // its snapshot out before its transaction, in several turns of the event loop).
    const pending: Array<ReturnType<typeof send>> = [];
    for (let i = 0; i < 20; i++) {
      pending.push(
        send('POST', `/forms/${form}/questions`, { questionText: `Q${i}`, type: 'short_text' }),
        send('POST', `/forms/${form}/publish`),
        send('PUT', `/forms/${form}`, { status: 'published' }),
      );
      await new Promise((r) => setTimeout(r, 2));
    }
    const results = await Promise.all(pending);
    for (const r of results) assert.ok([200, 201, 409].includes(r.statusCode), r.body);
    const conflicts = results.filter((r) => r.statusCode === 409);
    for (const r of conflicts) assert.equal(r.json().code, 'no_changes');
    const revisions = (await ok<Array<{ version: number; changesSummary: string }>>(send('GET', `/forms/${form}/revisions?limit=100`))).map((r) => r.version);
    const n = revisions.length;
    assert.ok(n >= 2, `only ${n} revision(s): the publishes did not interleave with the edits`);
    assert.deepEqual(revisions, Array.from({ length: n }, (_, i) => n - i), 'versions n..1, no gaps, no duplicates');
    const posted = results.filter((r) => r.statusCode === 201 && r.json().data.revision).map((r) => r.json().data.revision.version);
    assert.equal(new Set(posted).size, posted.length);
    const current = await ok(send('GET', `/forms/${form}`));
    assert.equal(current.currentVersion, n);
    // Every question added is in the latest snapshot or still waiting in the draft.
    const latest = (await ok(send('GET', `/forms/${form}/revisions/${n}`))).snapshot;
    assert.equal(current.questions.length, 20);
    if (!current.hasUnpublishedChanges) assert.deepEqual(latest.questions, current.questions, 'nothing unpublished: the latest revision is the draft');
    // Publish what is left, then the latest revision is the draft exactly.
    await send('POST', `/forms/${form}/publish`);
    const final = await ok(send('GET', `/forms/${form}`));
    const last = (await ok(send('GET', `/forms/${form}/revisions/${final.currentVersion}`))).snapshot;
    assert.deepEqual({ sections: last.sections, questions: last.questions, rules: last.rules }, { sections: final.sections, questions: final.questions, rules: final.rules });
    // Each snapshot holds a prefix of the questions in the order they were added.
    let previous = 0;
    for (let v = 1; v <= n; v++) {
      const count = (await ok(send('GET', `/forms/${form}/revisions/${v}`))).snapshot.questions.length;
      assert.ok(count >= previous, `version ${v} has ${count} questions, version ${v - 1} had ${previous}`);
      previous = count;
    }
  });

  it('a publish waits for an edit in progress and freezes its result, never half of it', async () => {
    const form = await newForm();
    const now = new Date().toISOString();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    // An edit as the content routes make it: the form's row locked, a question added, the flag
    // set and the stamp moved.
    const edit = ctx.store.db.transaction().execute(async (trx) => {
      let lock = trx.selectFrom('forms').select('id').where('id', '=', form);
      if (ctx.store.dialect === 'postgres') lock = lock.forUpdate();
      await lock.execute();
      await trx.insertInto('form_questions').values({
        id: '01900000-0000-7000-8000-00000000abcd', form_id: form, section_id: null, question_text: 'Held', description: null, type: 'short_text',
        is_required: 0, is_pii: 0, priority: 'medium', context: null, options: '{}', position: 0, created_at: now, updated_at: now,
      }).execute();
      locked();
      await held;
      const { updated_at } = await trx.selectFrom('forms').select('updated_at').where('id', '=', form).executeTakeFirstOrThrow();
      await trx.updateTable('forms').set({ has_unpublished_changes: 1, updated_at: nextStamp(updated_at) }).where('id', '=', form).execute();
    });
    await isLocked;
    const publishing = send('POST', `/forms/${form}/publish`);
    await new Promise((r) => setTimeout(r, 200));
    release();
    await edit;
    const published = await ok(publishing, 201);
    const snapshot = (await ok(send('GET', `/forms/${form}/revisions/${published.revision.version}`))).snapshot;
    assert.deepEqual(snapshot.questions.map((q: { questionText: string }) => q.questionText), ['Held'], 'the publish saw the whole edit');
  });

  it('documents: publish freezes metadata and fields; the revision outlives the draft fields', async () => {
    const doc = await newDocument();
    await ok(send('POST', `/documents/${doc}/fields/bulk`, { fields: [{ ...box, label: 'Name', type: 'short_text' }, { ...box, y: 0.3, label: 'Sign', type: 'digital_signature' }] }), 201);
    const draft = await ok(send('GET', `/documents/${doc}`));
    const res = await send('POST', `/documents/${doc}/publish`);
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(res.headers.location, `/api/v1/documents/${doc}/revisions/1`);
    const { document, revision } = res.json().data;
    assert.equal(document.status, 'published');
    assert.equal(document.currentVersion, 1);
    assert.equal(document.hasUnpublishedChanges, false);
    assert.equal(revision.documentId, doc);
    assert.equal(revision.changesSummary, 'First version: +2 fields');
    const first = await send('GET', `/documents/${doc}/revisions/1`);
    // The live document has a downloadUrl made at each read; a snapshot, which never changes, has none.
    // The publish answer's document is the live one, with its own downloadUrl.
    const { fields: draftFields, downloadUrl, ...draftDocument } = draft;
    const { downloadUrl: publishedUrl, ...publishedDocument } = document;
    assert.equal(typeof downloadUrl, 'string');
    assert.match(publishedUrl, /^https?:\/\//);
    assert.deepEqual(first.json().data.snapshot, { document: { ...draftDocument, ...publishedDocument }, fields: draftFields });
    assert.equal('downloadUrl' in first.json().data.snapshot.document, false);
    await fails(send('POST', `/documents/${doc}/publish`), 409, 'no_changes');

    for (const f of draftFields) await ok(send('DELETE', `/documents/${doc}/fields/${f.id}`));
    assert.equal((await ok(send('GET', `/documents/${doc}`))).fields.length, 0);
    assert.equal((await send('GET', `/documents/${doc}/revisions/1`)).body, first.body, 'the revision still serves its snapshot');
    const second = await ok(send('POST', `/documents/${doc}/publish`), 201);
    assert.equal(second.revision.changesSummary, '-2 fields');
    await ok(send('POST', `/documents/${doc}/fields`, { ...box, label: 'Date', type: 'date' }), 201);
    const viaPut = await ok(send('PUT', `/documents/${doc}`, { status: 'published' }));
    assert.equal(viaPut.currentVersion, 3);
    const list = (await send('GET', `/documents/${doc}/revisions`)).json();
    assert.deepEqual(list.data.map((r: { version: number }) => r.version), [3, 2, 1]);
    assert.equal(list.data[0].changesSummary, '+1 field');
    // Moving a field's box is a change to publish.
    const [dateField] = (await ok(send('GET', `/documents/${doc}`))).fields;
    await ok(send('PUT', `/documents/${doc}/fields/${dateField.id}`, { x: 0.5 }));
    assert.equal((await ok(send('POST', `/documents/${doc}/publish`), 201)).revision.changesSummary, '1 field moved');
    await ok(send('PUT', `/documents/${doc}/fields/${dateField.id}`, { label: 'Signed on' }));
    assert.equal((await ok(send('POST', `/documents/${doc}/publish`), 201)).revision.changesSummary, '1 field changed');
  });

  it('a revision keeps its stored file: the sweep and the delete path count revisions as references', async () => {
    // A file of its own (the other tests share theirs, and a shared file stays while anyone uses it).
    const doc = await newDocument(headers, await makePdf([{ width: 500, height: 700 }]));
    await ok(send('POST', `/documents/${doc}/publish`), 201);
    const { sha256 } = await ok(send('GET', `/documents/${doc}`));
    // Were the draft ever to point at another file, the revision would still hold this one.
    await ctx.store.db.updateTable('documents').set({ sha256: '0'.repeat(64) }).where('id', '=', doc).execute();
    assert.deepEqual(await unreferenced(ctx.store.db, [sha256]), []);
    // A journal entry for it, as a crashed delete would leave: the sweep checks it and keeps the file.
    await journal(ctx.store.db, [sha256], 'delete');
    const swept = await sweepBlobJournal(ctx.store, ctx.blobs, 0);
    assert.ok(await stored(sha256), `the revision's file survived a sweep that removed ${swept.removed}`);
    await ctx.store.db.updateTable('documents').set({ sha256 }).where('id', '=', doc).execute();
    // Removing the document for good removes its revisions, and then the file.
    await ok(send('DELETE', `/documents/${doc}?permanent=true`));
    assert.equal((await ctx.store.db.selectFrom('document_revisions').select('id').where('document_id', '=', doc).execute()).length, 0);
    assert.equal(await stored(sha256), false);
  });

  it('archived forms and documents keep their revisions readable and refuse to publish', async () => {
    const form = await newForm();
    await ok(send('POST', `/forms/${form}/publish`), 201);
    await ok(send('PUT', `/forms/${form}`, { status: 'archived' }));
    await fails(send('POST', `/forms/${form}/publish`), 409, 'form_not_editable');
    await fails(send('PUT', `/forms/${form}`, { status: 'published' }), 409, 'invalid_status_transition');
    assert.equal((await ok(send('GET', `/forms/${form}/revisions/1`))).version, 1);
    assert.equal((await ok(send('POST', `/forms/${form}/evaluate`, { answers: {}, version: 1 }))).visibleQuestionIds.length, 0);

    const doc = await newDocument();
    await ok(send('POST', `/documents/${doc}/publish`), 201);
    await ok(send('PUT', `/documents/${doc}`, { status: 'archived' }));
    await fails(send('POST', `/documents/${doc}/publish`), 409, 'document_not_editable');
    await fails(send('PUT', `/documents/${doc}`, { status: 'published' }), 409, 'invalid_status_transition');
    assert.equal((await send('GET', `/documents/${doc}/revisions`)).json().meta.total, 1);
    assert.equal((await ok(send('GET', `/documents/${doc}/revisions/1`))).snapshot.document.status, 'published');
  });

  it('grants: publishing needs the write grant, reading revisions needs revisions:read', async () => {
    const form = await newForm();
    const doc = await newDocument();
    await ok(send('POST', `/forms/${form}/publish`), 201);
    await ok(send('POST', `/documents/${doc}/publish`), 201);
    const readers = bearer(await ctx.key(['forms:read', 'documents:read'], 'revisions'));
    const revisionReader = bearer(await ctx.key(['read:revisions'], 'revisions'));
    for (const url of [`/forms/${form}/publish`, `/documents/${doc}/publish`]) await fails(send('POST', url, {}, readers), 403, 'missing_grant');
    for (const url of [`/forms/${form}/revisions`, `/forms/${form}/revisions/1`, `/documents/${doc}/revisions`, `/documents/${doc}/revisions/1`]) {
      await fails(send('GET', url, undefined, readers), 403, 'missing_grant', /revisions:read/);
      await ok(send('GET', url, undefined, revisionReader));
    }
  });

  it('a revision is served compressed and tagged as any answer, the same to every reader, and stays as frozen', async () => {
    const form = await newForm();
    for (let i = 0; i < 12; i++) await ok(send('POST', `/forms/${form}/questions`, { questionText: `Question ${i} ${'q'.repeat(200)}`, type: 'short_text' }), 201);
    await ok(send('POST', `/forms/${form}/publish`), 201);
    const url = `/api/v1/forms/${form}/revisions/1`;
    const get = (extra: Record<string, string> = {}) => ctx.app.inject({ method: 'GET', url, headers: { ...headers, ...extra } });
    const reads = await Promise.all([get(), get(), get({ 'accept-encoding': 'br' }), get({ 'accept-encoding': 'br' }), get({ 'accept-encoding': 'gzip' })]);
    const plain = reads[0];
    assert.equal(plain.statusCode, 200, plain.body);
    assert.equal(plain.headers['content-encoding'], undefined);
    assert.equal(plain.json().data.snapshot.questions.length, 12);
    assert.equal(plain.json().data.version, 1);
    for (const res of reads) assert.equal(res.headers.etag, plain.headers.etag);
    assert.equal(reads[1].body, plain.body);
    for (const res of reads.slice(2, 4)) {
      assert.equal(res.headers['content-encoding'], 'br');
      assert.equal(res.headers.vary, 'accept-encoding');
      assert.equal(zlib.brotliDecompressSync(res.rawPayload).toString(), plain.body);
    }
    assert.equal(reads[4].headers['content-encoding'], 'gzip');
    assert.equal(zlib.gunzipSync(reads[4].rawPayload).toString(), plain.body);
    const notModified = await get({ 'accept-encoding': 'br', 'if-none-match': String(plain.headers.etag) });
    assert.equal(notModified.statusCode, 304);
    assert.equal(notModified.rawPayload.length, 0);
    // The draft moves on and is published again: version 1 answers exactly as before.
    await ok(send('PUT', `/forms/${form}`, { title: 'Intake, renamed' }));
    await ok(send('POST', `/forms/${form}/publish`), 201);
    const again = await get();
    assert.equal(again.body, plain.body);
    assert.equal(again.headers.etag, plain.headers.etag);
    const second = await ok(send('GET', `/forms/${form}/revisions/2`));
    assert.equal(second.snapshot.form.title, 'Intake, renamed');
  });

  it("another workspace's forms, documents and revisions do not exist for it; nor do deleted ones", async () => {
    const form = await newForm();
    const doc = await newDocument();
    await ok(send('POST', `/forms/${form}/publish`), 201);
    await ok(send('POST', `/documents/${doc}/publish`), 201);
    // Read by their owner first: what this server keeps of them answers no one else.
    await ok(send('GET', `/forms/${form}/revisions/1`));
    await ok(send('GET', `/documents/${doc}/revisions/1`));
    const stranger = bearer(await ctx.key(ALL));
    const probes = (h: Record<string, string>) => [
      send('POST', `/forms/${form}/publish`, {}, h),
      send('POST', `/documents/${doc}/publish`, {}, h),
      send('GET', `/forms/${form}/revisions`, undefined, h),
      send('GET', `/forms/${form}/revisions/1`, undefined, h),
      send('GET', `/documents/${doc}/revisions`, undefined, h),
      send('GET', `/documents/${doc}/revisions/1`, undefined, h),
      send('POST', `/forms/${form}/evaluate`, { answers: {}, version: 1 }, h),
      send('PUT', `/forms/${form}`, { status: 'published' }, h),
      send('PUT', `/documents/${doc}`, { status: 'published' }, h),
    ];
    for (const res of await Promise.all(probes(stranger))) {
      assert.equal(res.statusCode, 404, res.body);
      assert.equal(res.json().code, 'not_found');
      assert.match(res.json().hint, /^(Form|Document) not found$/);
    }
    for (const url of ['/forms/not-an-id/revisions', '/documents/not-an-id/revisions/1']) await fails(send('GET', url), 404, 'not_found');
    // A bad version of a foreign form still says the form is not there.
    await fails(send('GET', `/forms/${form}/revisions/abc`, undefined, stranger), 404, 'not_found', /^Form not found$/);
    await fails(send('GET', `/documents/${doc}/revisions/0`, undefined, stranger), 404, 'not_found', /^Document not found$/);
    await ok(send('DELETE', `/forms/${form}`));
    await ok(send('DELETE', `/documents/${doc}`));
    for (const res of await Promise.all(probes(headers))) assert.equal(res.statusCode, 404, res.body);
    // Permanent delete removes the revisions with the form.
    await ok(send('DELETE', `/forms/${form}?permanent=true`));
    assert.equal((await ctx.store.db.selectFrom('form_revisions').select('id').where('form_id', '=', form).execute()).length, 0);
  });
});
