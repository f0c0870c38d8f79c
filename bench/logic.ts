/**
 * The show/hide engine (src/domain/logic.ts) on a form of 2,000 questions in 200 sections with
 * 2,000 rules (chains of dependent questions, fan-outs from one answer to many targets, rules on
 * sections), and on the same form 10 × larger, to show that evaluation time grows linearly.
 *
 *   npm run bench:logic
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildApp } from '../src/app.js';
import { DiskBlobStore } from '../src/blobs/disk.js';
import { newId } from '../src/domain/ids.js';
import { PdfAnalyzer } from '../src/files/pdf.js';
import { MemoryRateLimiter } from '../src/limits/memory.js';
import { createStore } from '../src/store/db.js';
import { createForm } from '../src/store/forms.js';
import { createKey } from '../src/store/keys.js';
import { migrate } from '../src/store/migrations.js';
import { compileLogic, decideVisibility, evaluateLogic, findCycle, type LogicForm, type LogicQuestion, type LogicRule } from '../src/domain/logic.js';
import type { QuestionType } from '../src/domain/questions.js';
import { median } from './lib.js';

/** One block: 2,000 questions in 200 sections with 2,000 rules. */
function makeBlock(): { form: LogicForm; answers: Record<string, unknown> } {
  const questionCount = 2000;
  const sectionCount = 200;
  const sections = Array.from({ length: sectionCount }, (_, i) => ({ id: `s${i}` }));
  const types: QuestionType[] = ['short_text', 'number', 'yes_no', 'mcq', 'multi_select', 'date'];
  const questions: LogicQuestion[] = Array.from({ length: questionCount }, (_, i) => ({
    id: `q${i}`,
    type: types[i % types.length]!,
    sectionId: `s${Math.floor(i / 10)}`,
    isRequired: i % 3 === 0,
    options: i % 6 === 3 || i % 6 === 4 ? { choices: ['a', 'b', 'c'] } : {},
  }));
  const rules: LogicRule[] = [];
  const condition = (source: number, negate: boolean) => {
    const type = questions[source]!.type;
    const id = `q${source}`;
    // With the answers below these hold for most questions, and the negated ones for few.
    if (type === 'number') return { sourceQuestionId: id, operator: negate ? ('greater_than' as const) : ('less_than' as const), value: 8 };
    if (type === 'yes_no') return { sourceQuestionId: id, operator: negate ? ('is_empty' as const) : ('is_not_empty' as const) };
    if (type === 'mcq') return { sourceQuestionId: id, operator: negate ? ('equals' as const) : ('is_any_of' as const), value: negate ? 'c' : ['a', 'b', 'c'] };
    if (type === 'multi_select') return { sourceQuestionId: id, operator: negate ? ('not_contains' as const) : ('contains' as const), value: 'a' };
    if (type === 'date') return { sourceQuestionId: id, operator: negate ? ('greater_than' as const) : ('less_than' as const), value: '2026-06-01' };
    return negate ? { sourceQuestionId: id, operator: 'is_empty' as const } : { sourceQuestionId: id, operator: 'contains' as const, value: 'x' };
  };
  const questionRule = (r: number, target: number, sources: number[], action: 'show' | 'hide') =>
    rules.push({
      id: `r${r}`,
      action,
      targetQuestionId: `q${target}`,
      targetSectionId: null,
      match: r % 2 ? 'all' : 'any',
      conditions: sources.map((source) => condition(source, action === 'hide')),
    });
  for (let r = 0; r < 2000; r++) {
    const kind = r % 4;
    if (kind === 0) {
      // chains: a run of questions, each shown by the one before it
      const target = 1 + ((r * 7) % (questionCount - 1));
      questionRule(r, target, [target - 1], 'show');
    } else if (kind === 1) {
      // fan-outs: one early pair of answers decides many later questions
      const hub = (Math.floor(r / 40) * 10) % Math.floor(questionCount / 2);
      questionRule(r, Math.min(questionCount - 1, hub + 20 + (r % 30)), [hub, hub + 1], r % 3 ? 'show' : 'hide');
    } else if (kind === 2) {
      // rules on sections, on answers of the opening questions (the first two sections)
      const section = 2 + (r % (sectionCount - 2));
      const hide = r % 8 === 2;
      rules.push({
        id: `r${r}`,
        action: hide ? 'hide' : 'show',
        targetQuestionId: null,
        targetSectionId: `s${section}`,
        match: 'any',
        conditions: [condition((r * 13) % 20, hide)],
      });
    } else {
      const target = 10 + (r % (questionCount - 10));
      questionRule(r, target, [target - 10, target - 7], r % 5 ? 'show' : 'hide');
    }
  }
  const answers: Record<string, unknown> = {};
  questions.forEach((q, i) => {
    if (i % 7 === 6) return;
    answers[q.id] = { short_text: 'xyz', number: i % 10, yes_no: i % 2 === 0, mcq: 'abc'[i % 3], multi_select: ['a'], date: '2026-03-01' }[q.type as 'short_text'];
  });
  return { form: { sections, questions, rules }, answers };
}

/**
 * The form `scale` times over: copies of the block with their own ids, so that a 10 × form has
 * exactly 10 × the work of the 1 × form and any growth beyond that is the engine's.
 */
function makeForm(scale: number): { form: LogicForm; answers: Record<string, unknown> } {
  const block = makeBlock();
  const form: LogicForm = { sections: [], questions: [], rules: [] };
  const answers: Record<string, unknown> = {};
  for (let copy = 0; copy < scale; copy++) {
    const id = (x: string) => (copy === 0 ? x : `${x}_${copy}`);
    const idOrNull = (x: string | null) => (x === null ? null : id(x));
    form.sections.push(...block.form.sections.map((section) => ({ id: id(section.id) })));
    form.questions.push(...block.form.questions.map((q) => ({ ...q, id: id(q.id), sectionId: idOrNull(q.sectionId) })));
    form.rules.push(
      ...block.form.rules.map((r) => ({
        ...r,
        id: id(r.id),
        targetQuestionId: idOrNull(r.targetQuestionId),
        targetSectionId: idOrNull(r.targetSectionId),
        conditions: r.conditions.map((c) => ({ ...c, sourceQuestionId: id(c.sourceQuestionId) })),
      })),
    );
    for (const [key, value] of Object.entries(block.answers)) answers[id(key)] = value;
  }
  return { form, answers };
}

/** Larger than this machine's caches: touching it between runs evicts the form and the answers. */
const flush = new Uint8Array(64 * 1024 * 1024);
let flushSink = 0;
function evictCaches(): void {
  for (let i = 0; i < flush.length; i += 64) flushSink += flush[i]!++;
}

/** Median time of `fn` run with cold caches, as in a server where other work runs between evaluations. */
function timeCold(fn: () => void, runs = 60): number {
  fn();
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    evictCaches();
    const t = performance.now();
    fn();
    samples.push(performance.now() - t);
  }
  return median(samples);
}

function timeIt(fn: () => void, minMs = 1000): number {
  for (let i = 0; i < 20; i++) fn();
  const samples: number[] = [];
  const until = performance.now() + minMs;
  while (performance.now() < until) {
    const t = performance.now();
    fn();
    samples.push(performance.now() - t);
  }
  return median(samples);
}

console.log(`show/hide engine, Node ${process.version}, ${os.cpus().length} cores`);
const results: Array<{ scale: number; evaluate: number; decide: number; compile: number; cycle: number; lookups: number; cold: number; coldLookups: number }> = [];
for (const scale of (process.env.BENCH_SCALES ?? '1,10').split(',').map(Number)) {
  const { form, answers } = makeForm(scale);
  if (findCycle(form)) throw new Error('the generated form has a loop');
  const compiled = compileLogic(form);
  const evaluate = timeIt(() => evaluateLogic(compiled, answers));
  const decide = timeIt(() => decideVisibility(compiled, answers));
  const compile = timeIt(() => compileLogic(form));
  const cycle = timeIt(() => findCycle(form));
  // Baseline: only reading the answers the rules and the required check read, each once, with
  // no decision at all. This is the least any engine must do with a plain object of answers.
  let sink = 0;
  const lookups = timeIt(() => {
    const { questionIds, conditionSource, required } = compiled;
    for (let c = 0; c < conditionSource.length; c++) if (answers[questionIds[conditionSource[c]!]!] !== undefined) sink++;
    for (let i = 0; i < questionIds.length; i++) if (required[i] && answers[questionIds[i]!] !== undefined) sink++;
  });
  if (sink === 0) throw new Error('no answers read');
  const cold = timeCold(() => evaluateLogic(compiled, answers));
  const coldLookups = timeCold(() => {
    const { questionIds, conditionSource, required } = compiled;
    for (let c = 0; c < conditionSource.length; c++) if (answers[questionIds[conditionSource[c]!]!] !== undefined) sink++;
    for (let i = 0; i < questionIds.length; i++) if (required[i] && answers[questionIds[i]!] !== undefined) sink++;
  });
  const visible = evaluateLogic(compiled, answers).visibleQuestionIds.length;
  results.push({ scale, evaluate, decide, compile, cycle, lookups, cold, coldLookups });
  console.log(
    `  ${form.questions.length} questions, ${form.sections.length} sections, ${form.rules.length} rules: evaluate ${evaluate.toFixed(3)} ms (median; ${visible} visible; the decision alone ${decide.toFixed(3)} ms), compile ${compile.toFixed(3)} ms, cycle check ${cycle.toFixed(3)} ms; baseline (reading those answers alone) ${lookups.toFixed(3)} ms; with cold caches: evaluate ${cold.toFixed(3)} ms, baseline ${coldLookups.toFixed(3)} ms`,
  );
}
const small = results[0]!;
const large = results[results.length - 1]!;

// The same 2,000-question form through POST /api/v1/forms/{id}/evaluate (app.inject: the whole
// request path — key, rate limit, validation, loading the content from SQLite, compiling,
// evaluating, serialising — without a socket).
{
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'formsign-bench-logic-'));
  const store = createStore({ databaseUrl: null, sqlitePath: path.join(dataDir, 'formsign.sqlite') });
  await migrate(store);
  const { key, info } = await createKey(store.db, { workspace: 'bench', name: 'bench', grants: ['forms:read'], expiresAt: null });
  const created = await createForm(store.db, info.workspaceId, { title: 'Large form' });
  const { form, answers } = makeForm(1);
  // Ids must be UUIDs in the API: map the block's ids to new ones.
  const ids = new Map<string, string>();
  const idOf = (x: string) => ids.get(x) ?? (ids.set(x, newId()), ids.get(x)!);
  const now = new Date().toISOString();
  await store.db.transaction().execute(async (trx) => {
    for (const [i, section] of form.sections.entries()) {
      await trx.insertInto('form_sections').values({ id: idOf(section.id), form_id: created.id, title: section.id, description: null, position: i, created_at: now, updated_at: now }).execute();
    }
    for (const [i, q] of form.questions.entries()) {
      await trx.insertInto('form_questions').values({
        id: idOf(q.id), form_id: created.id, section_id: q.sectionId ? idOf(q.sectionId) : null, question_text: q.id, description: null, type: q.type,
        is_required: q.isRequired ? 1 : 0, is_pii: 0, priority: 'medium', context: null, options: JSON.stringify(q.options), position: i, created_at: now, updated_at: now,
      }).execute();
    }
    for (const [i, r] of form.rules.entries()) {
      await trx.insertInto('form_rules').values({
        id: idOf(r.id), form_id: created.id, action: r.action, target_question_id: r.targetQuestionId ? idOf(r.targetQuestionId) : null,
        target_section_id: r.targetSectionId ? idOf(r.targetSectionId) : null, match: r.match,
        conditions: JSON.stringify(r.conditions.map((c) => ({ ...c, sourceQuestionId: idOf(c.sourceQuestionId), value: c.value ?? null }))), position: i, created_at: now, updated_at: now,
      }).execute();
    }
  });
  const app = await buildApp({
    store, limiter: new MemoryRateLimiter(1_000_000_000), blobs: new DiskBlobStore(dataDir), pdf: new PdfAnalyzer(), libreOffice: null, maxUploadBytes: 1, logLevel: 'silent',
  });
  const payload = { answers: Object.fromEntries(Object.entries(answers).map(([k, v]) => [idOf(k), v])) };
  const request = () => app.inject({ method: 'POST', url: `/api/v1/forms/${created.id}/evaluate`, headers: { authorization: `Bearer ${key}` }, payload });
  const check = await request();
  if (check.statusCode !== 200) throw new Error(`evaluate answered ${check.statusCode}: ${check.body}`);
  const samples: number[] = [];
  for (let i = 0; i < 5; i++) await request();
  for (let i = 0; i < 60; i++) {
    const t = performance.now();
    await request();
    samples.push(performance.now() - t);
  }
  console.log(`  POST /api/v1/forms/{id}/evaluate on the 2,000-question form: ${median(samples).toFixed(1)} ms (median of 60; ${check.json().data.visibleQuestionIds.length} visible)`);
  await app.close();
  await store.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
console.log(`\n${large.scale / small.scale} × the form: evaluate ${(large.evaluate / small.evaluate).toFixed(1)} × the time (goal ≤ 12), the decision alone ${(large.decide / small.decide).toFixed(1)} ×, compile ${(large.compile / small.compile).toFixed(1)} ×, cycle check ${(large.cycle / small.cycle).toFixed(1)} ×; the baseline (reading the answers alone) ${(large.lookups / small.lookups).toFixed(1)} ×`);
console.log(`with cold caches: evaluate ${(large.cold / small.cold).toFixed(1)} × the time, the baseline ${(large.coldLookups / small.coldLookups).toFixed(1)} ×${flushSink < 0 ? '' : ''}`);
console.log(`goal: one evaluation of the 2,000-question form ≤ 5 ms: ${small.evaluate.toFixed(3)} ms${small.evaluate + small.compile <= 5 ? ` (with compiling: ${(small.evaluate + small.compile).toFixed(3)} ms)` : ''}`);
