/**
 * Attacks on forms (issue 14, items 1 and 2), each against a built server while the prober of
 * `stall-lib.ts` times `GET /healthz` and workspace B's read and samples the server's RSS:
 *
 * 1. `contains` on long answers: a form holding the largest rule set the limits allow (5,000
 *    conditions, 1,000 of them `contains` on one long-text question, needles made to be the
 *    string search's worst case), evaluated back to back by 4 clients with the longest answer
 *    allowed (10,000 × "İ"), while a fifth sends the issue's ~1 MiB answer (refused: 400).
 * 2. Large forms: the largest form the limits allow (2,000 questions, 200 sections, 2,000 rules,
 *    2 MiB of content, 64 KiB of settings) read ten at a time (`GET /forms/{id}`), with paginated
 *    lists (`…/questions?limit=1`) and evaluations of its draft in between.
 * 2b. The same form read 100 at a time, three times over, compressed (`Accept-Encoding: br`, the
 *    answers read raw): what concurrent compressed answers of 2 MiB cost the server's memory.
 * 2c. The same form published once, and its revision read in the same way
 *    (`GET /forms/{id}/revisions/1`: the revision with its 2 MiB snapshot).
 * 3. Publishing as much as allowed: the largest form published again and again (a title change
 *    between) until the workspace's revision budget refuses (413), its latest revision read
 *    back and evaluated meanwhile.
 *
 *   npm run build && node --import tsx bench/stall-forms.ts
 *   FORMSIGN_TEST_DB=postgres node --import tsx bench/stall-forms.ts
 *   BENCH_ATTACKS=1,2 …     # a subset (1 includes the baseline: the prober alone for 10 s);
 *                           # BENCH_BUDGET=<bytes> sets REVISION_BYTES_PER_WORKSPACE for attack 3
 */
import os from 'node:os';
import { newId } from '../src/domain/ids.js';
import { LIMITS } from '../src/domain/limits.js';
import { createStore } from '../src/store/db.js';
import { formBytes } from '../src/store/form-content.js';
import { nextStamp } from '../src/store/live.js';
import { median } from './lib.js';
import { BENCH_DB, compressedReads, printReport, startServer, underAttack, type AttackRow, type StallServer } from './stall-lib.js';

const attacks = new Set((process.env.BENCH_ATTACKS ?? '1,2,3').split(',').map((s) => s.trim()));

interface Answer {
  status: number;
  body: { success: boolean; data?: any; code?: string; hint?: string };
  bytes: number;
  ms: number;
}

/**
 * One request as workspace A. Bodies over 256 KiB are not parsed (`body` is then `{}`): this
 * process shares the machine's two cores with the server and the prober, and parsing megabytes
 * of answers would slow them down, not the server.
 */
async function api(server: StallServer, method: string, path: string, body?: unknown): Promise<Answer> {
  const started = performance.now();
  const res = await fetch(`${server.base}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${server.keyA}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const bytes = Buffer.from(await res.arrayBuffer());
  const parsed = bytes.length > 0 && bytes.length <= 262_144 ? JSON.parse(bytes.toString('utf8')) : {};
  return { status: res.status, body: parsed, bytes: bytes.length, ms: performance.now() - started };
}

async function must(server: StallServer, method: string, path: string, body?: unknown, status = 200): Promise<any> {
  const res = await api(server, method, path, body);
  if (res.status !== status) throw new Error(`${method} ${path} answered ${res.status}: ${JSON.stringify(res.body).slice(0, 300)}`);
  return res.body.data;
}

/** Runs `work` in `n` loops until `seconds` have passed; answers each loop's results. */
async function loops<T>(n: number, seconds: number, work: (i: number) => Promise<T>): Promise<T[]> {
  const until = performance.now() + seconds * 1000;
  const out: T[] = [];
  await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      while (performance.now() < until) out.push(await work(i));
    }),
  );
  return out;
}

const ms = (values: number[]) => `median ${median(values).toFixed(1)} ms, worst ${Math.max(...values).toFixed(1)} ms`;

// ---- 1. contains on long answers -------------------------------------------------------------

async function containsAttack(server: StallServer): Promise<AttackRow> {
  const form = (await must(server, 'POST', '/forms', { title: 'Text searches' }, 201)).id as string;
  const text = (await must(server, 'POST', `/forms/${form}/questions`, { questionText: 'Essay', type: 'long_text' }, 201)).id as string;
  const number = (await must(server, 'POST', `/forms/${form}/questions`, { questionText: 'Number', type: 'number' }, 201)).id as string;
  const targets: string[] = [];
  for (let i = 0; i < 20; i++) targets.push((await must(server, 'POST', `/forms/${form}/questions`, { questionText: `Target ${i}`, type: 'short_text' }, 201)).id);
  // 50 rules × 20 `contains` with distinct needles: a run of "i̇" (what "İ" folds to) that the
  // answer matches almost to the end, the string search's worst case; 200 rules × 20 others.
  const perRule = LIMITS.conditionsPerRule;
  const searchRules = LIMITS.textSearchesPerForm / perRule;
  const otherRules = (LIMITS.conditionsPerForm - LIMITS.textSearchesPerForm) / perRule;
  for (let r = 0; r < searchRules; r++) {
    const conditions = Array.from({ length: perRule }, (_, i) => ({ sourceQuestionId: text, operator: i % 2 ? 'contains' : 'not_contains', value: `${'i̇'.repeat(40 + ((r * perRule + i) % 400))}x` }));
    await must(server, 'POST', `/forms/${form}/rules`, { action: 'show', targetQuestionId: targets[r % targets.length], match: 'all', conditions }, 201);
  }
  for (let r = 0; r < otherRules; r++) {
    const conditions = Array.from({ length: perRule }, (_, i) => ({ sourceQuestionId: number, operator: 'greater_than', value: r * perRule + i }));
    await must(server, 'POST', `/forms/${form}/rules`, { action: 'hide', targetQuestionId: targets[r % targets.length], match: 'all', conditions }, 201);
  }
  const refusal = await api(server, 'POST', `/forms/${form}/rules`, { action: 'show', targetQuestionId: targets[0], sourceQuestionId: number, operator: 'is_empty' });
  if (refusal.status !== 400) throw new Error(`the rule set is not the largest allowed: one more condition answered ${refusal.status}`);

  const longest = JSON.stringify({ answers: { [text]: 'İ'.repeat(LIMITS.answerTextLength), [number]: 5 } });
  const mebibyte = JSON.stringify({ answers: { [text]: 'İ'.repeat(524_000) } });
  return underAttack(server, `1. contains: ${LIMITS.conditionsPerForm.toLocaleString('en-US')} conditions (${LIMITS.textSearchesPerForm.toLocaleString('en-US')} contains), 10,000 × "İ"`, async () => {
    const results = await loops(5, 15, async (i) => (i === 4 ? { ...(await api(server, 'POST', `/forms/${form}/evaluate`, mebibyte)), big: true } : { ...(await api(server, 'POST', `/forms/${form}/evaluate`, longest)), big: false }));
    const evaluated = results.filter((r) => !r.big);
    const refused = results.filter((r) => r.big);
    const ok = evaluated.every((r) => r.status === 200) && refused.every((r) => r.status === 400 && r.body.code === 'validation_failed');
    return {
      outcome: `${evaluated.length} evaluations with the longest answer allowed (${ms(evaluated.map((r) => r.ms))}), ${refused.length} answers of ~1 MiB refused (${refused[0]?.status} ${refused[0]?.body.code}: "${refused[0]?.body.hint?.slice(0, 70)}…", ${ms(refused.map((r) => r.ms))})`,
      ok,
    };
  });
}

// ---- 2 and 3. the largest form ---------------------------------------------------------------

/**
 * Writes the largest form the limits allow straight into the database (4,200 ordinary requests
 * would take minutes), then checks through the API that it is full: one more question is refused.
 */
async function largestForm(server: StallServer): Promise<{ form: string; bytes: number; questionIds: string[] }> {
  const settings = { blob: 'x'.repeat(64 * 1024 - 20) };
  const form = (await must(server, 'POST', '/forms', { title: 'The largest form', settings }, 201)).id as string;
  const store = createStore({ databaseUrl: server.databaseUrl, sqlitePath: `${server.dataDir}/formsign.sqlite` });
  const sectionIds = Array.from({ length: LIMITS.sectionsPerForm }, () => newId());
  const questionIds = Array.from({ length: LIMITS.questionsPerForm }, () => newId());
  const now = new Date().toISOString();
  // Rules: one condition each; questions: multiple-choice, their choices filling what is left.
  const ruleConditions = (i: number) => JSON.stringify([{ sourceQuestionId: questionIds[i % 1000]!, operator: 'is_any_of', value: ['choice 1', 'choice 2', 'choice 3'] }]);
  const ruleBytes = LIMITS.rulesPerForm * (ruleConditions(0).length + 310);
  const sectionBytes = LIMITS.sectionsPerForm * (212 + 'Section 000'.length);
  const perQuestion = Math.floor((LIMITS.formBytes - ruleBytes - sectionBytes) / LIMITS.questionsPerForm) - 372 - 'Question 0000'.length - 10;
  const choices: string[] = [];
  while (JSON.stringify({ choices: [...choices, `choice ${choices.length}`], allow_other: false }).length <= perQuestion) choices.push(`choice ${choices.length}`);
  const options = JSON.stringify({ choices, allow_other: false });
  await store.db.transaction().execute(async (trx) => {
    for (const [i, id] of sectionIds.entries()) {
      await trx.insertInto('form_sections').values({ id, form_id: form, title: `Section ${String(i).padStart(3, '0')}`, description: null, position: i, created_at: now, updated_at: now }).execute();
    }
    for (const [i, id] of questionIds.entries()) {
      await trx.insertInto('form_questions').values({
        id, form_id: form, section_id: sectionIds[Math.floor(i / 10)]!, question_text: `Question ${String(i).padStart(4, '0')}`, description: null, type: 'mcq',
        is_required: i % 3 === 0 ? 1 : 0, is_pii: 0, priority: 'medium', context: null, options, position: i, created_at: now, updated_at: now,
      }).execute();
    }
    for (let i = 0; i < LIMITS.rulesPerForm; i++) {
      await trx.insertInto('form_rules').values({
        id: newId(), form_id: form, action: 'show', target_question_id: questionIds[1000 + (i % 1000)]!, target_section_id: null, match: 'all',
        conditions: ruleConditions(i), position: i, created_at: now, updated_at: now,
      }).execute();
    }
    const { updated_at } = await trx.selectFrom('forms').select('updated_at').where('id', '=', form).executeTakeFirstOrThrow();
    await trx.updateTable('forms').set({ updated_at: nextStamp(updated_at), has_unpublished_changes: 1 }).where('id', '=', form).execute();
  });
  const bytes = await formBytes(store.db, form);
  await store.close();
  if (bytes > LIMITS.formBytes) throw new Error(`the form is ${bytes} bytes, over the limit`);
  const more = await api(server, 'POST', `/forms/${form}/sections`, { title: 'One more' });
  if (more.status !== 400) throw new Error(`the form is not full: one more section answered ${more.status}`);
  return { form, bytes, questionIds };
}

async function readAttack(server: StallServer, form: string, bytes: number, questionIds: string[]): Promise<AttackRow> {
  const answers = JSON.stringify({ answers: Object.fromEntries(questionIds.slice(0, 1000).map((id, i) => [id, `choice ${i % 4}`])) });
  return underAttack(server, `2. the largest form (${(bytes / 1048576).toFixed(2)} MiB of content) read 10 at a time`, async () => {
    const reads: Answer[] = [];
    const pages: Answer[] = [];
    const evaluations: Answer[] = [];
    let length = 0;
    for (let round = 0; round < 8; round++) {
      const batch = await Promise.all(Array.from({ length: 10 }, () => api(server, 'GET', `/forms/${form}`)));
      reads.push(...batch);
      length = batch[0]!.bytes;
      pages.push(...(await Promise.all(Array.from({ length: 10 }, (_, i) => api(server, 'GET', `/forms/${form}/questions?limit=1&page=${1 + i * 199}`)))));
      evaluations.push(...(await Promise.all(Array.from({ length: 4 }, () => api(server, 'POST', `/forms/${form}/evaluate`, answers)))));
    }
    const ok = [...reads, ...pages, ...evaluations].every((r) => r.status === 200) && pages.every((r) => r.body.data.length === 1);
    return {
      outcome: `${reads.length} reads of ${(length / 1048576).toFixed(2)} MB (${ms(reads.map((r) => r.ms))}), ${pages.length} one-question pages (${ms(pages.map((r) => r.ms))}), ${evaluations.length} evaluations of the draft (${ms(evaluations.map((r) => r.ms))})`,
      ok,
    };
  });
}

async function compressedReadAttack(server: StallServer, name: string, path: string): Promise<AttackRow> {
  return underAttack(server, name, () => compressedReads(server, `/api/v1${path}`));
}

async function publishAttack(server: StallServer, form: string, questionIds: string[]): Promise<AttackRow> {
  const answers = JSON.stringify({ answers: Object.fromEntries(questionIds.slice(0, 1000).map((id, i) => [id, `choice ${i % 4}`])), version: 1 });
  return underAttack(server, '3. the largest form published until the revision budget refuses', async () => {
    const publishes: Answer[] = [];
    const reads: Answer[] = [];
    let refused: Answer | undefined;
    for (let i = 0; !refused && i < 5000; i++) {
      await must(server, 'PUT', `/forms/${form}`, { title: `The largest form, edition ${i}` });
      const res = await api(server, 'POST', `/forms/${form}/publish`, i % 2 ? { changesSummary: 'Edition' } : undefined);
      if (res.status === 201) publishes.push(res);
      else refused = res;
      if (i % 10 === 0) {
        const version = publishes.length;
        reads.push(...(await Promise.all([api(server, 'GET', `/forms/${form}/revisions/${version}`), api(server, 'POST', `/forms/${form}/evaluate`, answers.replace('"version":1', `"version":${version}`))])));
      }
    }
    const ok = refused?.status === 413 && refused.body.code === 'payload_too_large' && reads.every((r) => r.status === 200);
    return {
      outcome: `${publishes.length} publishes (${ms(publishes.map((r) => r.ms))}), then ${refused?.status} ${refused?.body.code}: "${refused?.body.hint?.slice(0, 150)}…"; ${reads.length} revision reads and evaluations of the latest version meanwhile (${ms(reads.map((r) => r.ms))})`,
      ok,
    };
  });
}

const rows: AttackRow[] = [];
if (attacks.has('1')) {
  const server = await startServer();
  try {
    // The baseline of the same run: the prober alone, so that the machine's own noise (other
    // processes on its two cores) can be told from what an attack does.
    rows.push(await underAttack(server, '0. no attack (baseline)', async () => {
      await new Promise((r) => setTimeout(r, 10_000));
      return `nothing for 10 s (load average ${os.loadavg().map((n) => n.toFixed(1)).join(', ')})`;
    }));
    rows.push(await containsAttack(server));
  } finally {
    await server.stop();
  }
}
if (attacks.has('2') || attacks.has('2b') || attacks.has('2c') || attacks.has('3')) {
  const server = await startServer({ env: process.env.BENCH_BUDGET ? { REVISION_BYTES_PER_WORKSPACE: process.env.BENCH_BUDGET } : {} });
  try {
    const { form, bytes, questionIds } = await largestForm(server);
    if (attacks.has('2')) rows.push(await readAttack(server, form, bytes, questionIds));
    if (attacks.has('2b')) rows.push(await compressedReadAttack(server, '2b. the largest form read 100 at a time with Accept-Encoding: br, three times', `/forms/${form}`));
    if (attacks.has('2c')) {
      const published = await api(server, 'POST', `/forms/${form}/publish`, { changesSummary: 'For attack 2c' });
      if (published.status !== 201) throw new Error(`publishing the largest form answered ${published.status}`);
      const version = published.body.data.revision.version as number;
      rows.push(await compressedReadAttack(server, '2c. its revision (2 MiB snapshot) read 100 at a time with Accept-Encoding: br, three times', `/forms/${form}/revisions/${version}`));
    }
    if (attacks.has('3')) rows.push(await publishAttack(server, form, questionIds));
  } finally {
    await server.stop();
  }
}
const passed = printReport(rows, `attacks on forms, ${BENCH_DB}`);
process.exit(passed ? 0 : 1);
