import { CompiledQuery, sql, type Kysely, type Transaction } from 'kysely';
import { AppError, invalid, notFound } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import type { LogicForm, LogicRule } from '../domain/logic.js';
import { normalizeOptions } from '../domain/question-options.js';
import type { Priority, QuestionType } from '../domain/questions.js';
import { assertLogicLimits, assertNoCycle, checkRule, mergeRule, type RuleInput } from '../domain/rules.js';
import type { Dialect, Store } from './db.js';
import { clampPosition, closeGap, openGap, shiftBetween, type Siblings } from './ordering.js';
import type { Database, FormQuestionRow, FormRow, FormRuleRow, FormSectionRow } from './schema.js';
import { preparedQuery } from './prepared.js';
import { formUpdated, lockLiveForm, nextStamp } from './forms.js';
import { count, LIMITS } from '../domain/limits.js';


export interface SectionView {
  id: string;
  formId: string;
  title: string;
  description: string | null;
  order: number;
  createdAt: string;
  updatedAt: string;
}

export interface QuestionView {
  id: string;
  formId: string;
  sectionId: string | null;
  questionText: string;
  description: string | null;
  type: QuestionType;
  isRequired: boolean;
  isPii: boolean;
  priority: Priority;
  context: string | null;
  options: Record<string, unknown>;
  order: number;
  createdAt: string;
  updatedAt: string;
}

export interface RuleView {
  id: string;
  formId: string;
  action: 'show' | 'hide';
  targetQuestionId: string | null;
  targetSectionId: string | null;
  match: 'all' | 'any';
  conditions: Array<{ sourceQuestionId: string; operator: string; value: unknown }>;
  order: number;
  createdAt: string;
  updatedAt: string;
}

export interface FormContent {
  sections: SectionView[];
  questions: QuestionView[];
  rules: RuleView[];
}

const toSection = (r: FormSectionRow): SectionView => ({
  id: r.id, formId: r.form_id, title: r.title, description: r.description, order: Number(r.position), createdAt: r.created_at, updatedAt: r.updated_at,
});
const toQuestion = (r: FormQuestionRow): QuestionView => ({
  id: r.id,
  formId: r.form_id,
  sectionId: r.section_id,
  questionText: r.question_text,
  description: r.description,
  type: r.type as QuestionType,
  isRequired: Boolean(r.is_required),
  isPii: Boolean(r.is_pii),
  priority: r.priority as Priority,
  context: r.context,
  options: JSON.parse(r.options) as Record<string, unknown>,
  order: Number(r.position),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});
const toRule = (r: FormRuleRow): RuleView => ({
  id: r.id,
  formId: r.form_id,
  action: r.action as 'show' | 'hide',
  targetQuestionId: r.target_question_id,
  targetSectionId: r.target_section_id,
  match: r.match as 'all' | 'any',
  conditions: (JSON.parse(r.conditions) as RuleView['conditions']).map((c) => ({ sourceQuestionId: c.sourceQuestionId, operator: c.operator, value: c.value ?? null })),
  order: Number(r.position),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

// Read on every GET /forms/{id}: compiled once (see prepared.ts).
const sectionsOf = preparedQuery<FormSectionRow, [string]>(1, (db: Kysely<Database>, formId) =>
  db.selectFrom('form_sections').selectAll().where('form_id', '=', formId!).orderBy('position'),
);
const questionsOf = preparedQuery<FormQuestionRow, [string]>(1, (db: Kysely<Database>, formId) =>
  db.selectFrom('form_questions').selectAll().where('form_id', '=', formId!).orderBy('position'),
);
const rulesOf = preparedQuery<FormRuleRow, [string]>(1, (db: Kysely<Database>, formId) =>
  db.selectFrom('form_rules').selectAll().where('form_id', '=', formId!).orderBy('position'),
);

const COLUMNS = {
  form_sections: ['id', 'form_id', 'title', 'description', 'position', 'created_at', 'updated_at'],
  form_questions: ['id', 'form_id', 'section_id', 'question_text', 'description', 'type', 'is_required', 'is_pii', 'priority', 'context', 'options', 'position', 'created_at', 'updated_at'],
  form_rules: ['id', 'form_id', 'action', 'target_question_id', 'target_section_id', 'match', 'conditions', 'position', 'created_at', 'updated_at'],
} as const;

/** `(select <JSON array of the form's rows of table, in order>)` in the dialect's own JSON functions. */
function rowsAsJson(dialect: Dialect, table: keyof typeof COLUMNS) {
  if (dialect === 'postgres') {
    return sql.raw(`(select coalesce(json_agg(t order by t.position), '[]'::json)::text from ${table} t where t.form_id = forms.id)`);
  }
  const fields = COLUMNS[table].map((c) => `'${c}', t.${c}`).join(', ');
  return sql.raw(`(select json_group_array(json_object(${fields})) from (select * from ${table} where form_id = forms.id order by position) t)`);
}

const formWithContent = new Map<Dialect, string>();

/**
 * A live form of the workspace with its question count, sections, questions and rules, in one
 * statement: one round trip, and one consistent state by construction (a statement sees one
 * snapshot on both databases). `undefined` when there is no such form.
 */
export async function loadFormWithContent(
  store: Store,
  workspaceId: string,
  formId: string,
): Promise<{ form: FormRow; questionCount: number; content: FormContent; bytes: number } | undefined> {
  let text = formWithContent.get(store.dialect);
  if (!text) {
    const query = sql`select forms.*,
        (select count(*) from form_questions q where q.form_id = forms.id) as question_count,
        ${rowsAsJson(store.dialect, 'form_sections')} as sections_json,
        ${rowsAsJson(store.dialect, 'form_questions')} as questions_json,
        ${rowsAsJson(store.dialect, 'form_rules')} as rules_json
      from forms where workspace_id = ${'$ws'} and id = ${'$id'} and deleted_at is null`.compile(store.db);
    text = query.sql;
    formWithContent.set(store.dialect, text);
  }
  const result = await store.db.executeQuery<FormRow & { question_count: number | string; sections_json: string; questions_json: string; rules_json: string }>(
    CompiledQuery.raw(text, [workspaceId, formId]),
  );
  const row = result.rows[0];
  if (!row) return undefined;
  const { question_count, sections_json, questions_json, rules_json, ...form } = row;
  return {
    form: form as FormRow,
    questionCount: Number(question_count),
    /** The content's size as JSON text, as read (what caching the content costs, roughly). */
    bytes: sections_json.length + questions_json.length + rules_json.length,
    content: {
      sections: (JSON.parse(sections_json) as FormSectionRow[]).map(toSection),
      questions: (JSON.parse(questions_json) as FormQuestionRow[]).map(toQuestion),
      rules: (JSON.parse(rules_json) as FormRuleRow[]).map(toRule),
    },
  };
}

const CONTENT_TABLES = { sections: 'form_sections', questions: 'form_questions', rules: 'form_rules' } as const;
type ContentKind = keyof typeof CONTENT_TABLES;
const VIEWS = { sections: toSection, questions: toQuestion, rules: toRule } as const;

/**
 * One page of a live form's sections, questions or rules, in order, and how many there are, or
 * `undefined` when there is no such form. Only the page is read (SQL `limit`/`offset`, and a
 * count), never the whole form, in one statement: the total and the page are of one moment.
 */
export async function listContent<K extends ContentKind>(
  db: Kysely<Database>,
  workspaceId: string,
  formId: string,
  kind: K,
  page: { offset: number; limit: number },
): Promise<{ items: Array<ReturnType<(typeof VIEWS)[K]>>; total: number } | undefined> {
  const table = sql.table(CONTENT_TABLES[kind]);
  // The form's row joined to its page: one row (all nulls from the page) when the page is empty.
  const result = await sql<{ content_total: number | string; id: string | null }>`select
      (select count(*) from ${table} c where c.form_id = f.id) as content_total, t.*
    from forms f
    left join (select * from ${table} where form_id = ${formId} order by position limit ${page.limit} offset ${page.offset}) t on 1 = 1
    where f.workspace_id = ${workspaceId} and f.id = ${formId} and f.deleted_at is null
    order by t.position`.execute(db);
  const first = result.rows[0];
  if (!first) return undefined;
  const view = VIEWS[kind] as (row: unknown) => ReturnType<(typeof VIEWS)[K]>;
  return { items: result.rows.filter((row) => row.id !== null).map(view), total: Number(first.content_total) };
}

// The draft's version on every POST /evaluate without `version`: compiled once (see prepared.ts).
const stampOf = preparedQuery<{ updated_at: string }, [string, string]>(2, (db: Kysely<Database>, workspaceId, formId) =>
  db.selectFrom('forms').select('updated_at').where('workspace_id', '=', workspaceId!).where('id', '=', formId!).where('deleted_at', 'is', null),
);

/**
 * A live form's `updated_at`, which every change of its draft moves forward (`nextStamp`): one
 * indexed row read that tells whether a compiled draft is still the draft. `undefined` when
 * there is no such form.
 */
export async function draftStamp(db: Kysely<Database>, workspaceId: string, formId: string): Promise<string | undefined> {
  return (await stampOf(db, workspaceId, formId))[0]?.updated_at;
}

const liveRowOf = preparedQuery<FormRow, [string, string]>(2, (db: Kysely<Database>, workspaceId, formId) =>
  db.selectFrom('forms').selectAll().where('workspace_id', '=', workspaceId!).where('id', '=', formId!).where('deleted_at', 'is', null),
);

/** A live form's row alone (its `updated_at` is the draft's stamp), or `undefined`. */
export async function liveFormRow(db: Kysely<Database>, workspaceId: string, formId: string): Promise<FormRow | undefined> {
  return (await liveRowOf(db, workspaceId, formId))[0];
}

/**
 * The content of `GET /forms/{id}` after the form's own keys, as JSON text:
 * `"sections":[…],"questions":[…],"rules":[…]`, each object in the shape the API returns it.
 */
export function contentJson(content: FormContent): string {
  return `"sections":${JSON.stringify(content.sections)},"questions":${JSON.stringify(content.questions)},"rules":${JSON.stringify(content.rules)}`;
}

export async function loadContent(db: Kysely<Database>, formId: string): Promise<FormContent> {
  const [sections, questions, rules] = await Promise.all([sectionsOf(db, formId), questionsOf(db, formId), rulesOf(db, formId)]);
  return { sections: sections.map(toSection), questions: questions.map(toQuestion), rules: rules.map(toRule) };
}

/** The content as the logic engine sees it, with names for hints. */
export function logicOf(content: FormContent, exceptRuleId?: string): LogicForm & { texts: Map<string, string> } {
  return {
    sections: content.sections.map((s) => ({ id: s.id })),
    questions: content.questions.map((q) => ({ id: q.id, type: q.type, sectionId: q.sectionId, isRequired: q.isRequired, options: q.options })),
    rules: content.rules.filter((r) => r.id !== exceptRuleId).map(ruleLogic),
    texts: new Map([...content.questions.map((q) => [q.id, q.questionText] as const), ...content.sections.map((s) => [s.id, s.title] as const)]),
  };
}

function ruleLogic(r: RuleView): LogicRule {
  return { id: r.id, action: r.action, targetQuestionId: r.targetQuestionId, targetSectionId: r.targetSectionId, match: r.match, conditions: r.conditions as LogicRule['conditions'] };
}

const ROOM = { questions: LIMITS.questionsPerForm, sections: LIMITS.sectionsPerForm, rules: LIMITS.rulesPerForm } as const;

function assertRoom(kind: keyof typeof ROOM, n: number): void {
  if (n >= ROOM[kind]) throw invalid('', `a form holds at most ${count(ROOM[kind])} ${kind} (the limit of ${kind} per form); this one is full`);
}

/** A question as the API returns it is at most `LIMITS.questionBytes` of JSON (`413`). */
function assertQuestionSize(view: QuestionView): void {
  const bytes = Buffer.byteLength(JSON.stringify(view));
  if (bytes > LIMITS.questionBytes) {
    throw new AppError('payload_too_large', `The question would be ${count(bytes)} bytes as JSON; a question may be at most ${count(LIMITS.questionBytes)} bytes (the question size limit). Shorten its options (choices, labels) or texts.`);
  }
}

/**
 * JSON a form's sections, questions and rules take, each item's stored texts in UTF-8 bytes plus
 * what its ids, flags and timestamps take in the API's JSON (measured on the largest such item):
 * the size of the `sections`, `questions` and `rules` of `GET /forms/{id}`, read from the
 * database's own byte counts without loading the content.
 */
export async function formBytes(db: Kysely<Database>, formId: string): Promise<number> {
  const row = await sql<{ bytes: number | string }>`select
      (select coalesce(sum(octet_length(question_text) + coalesce(octet_length(description), 0) + coalesce(octet_length(context), 0) + octet_length(options) + 372), 0)
        from form_questions where form_id = ${formId})
      + (select coalesce(sum(octet_length(title) + coalesce(octet_length(description), 0) + 212), 0) from form_sections where form_id = ${formId})
      + (select coalesce(sum(octet_length(conditions) + 310), 0) from form_rules where form_id = ${formId}) as bytes`.execute(db);
  return Number(row.rows[0]!.bytes);
}

/** A form that grew past `LIMITS.formBytes`: `413`, the transaction rolled back by the caller. */
async function assertFormSize(trx: Transaction<Database>, formId: string): Promise<void> {
  const bytes = await formBytes(trx, formId);
  if (bytes > LIMITS.formBytes) {
    throw new AppError('payload_too_large', `The form would hold ${count(bytes)} bytes of questions, sections and rules as JSON; a form may hold at most ${count(LIMITS.formBytes)} bytes (the form size limit). Nothing was changed; split the form or shorten its content.`);
  }
}

/** Calculations whose formula refers to `questionId`. */
function formulasUsing(content: FormContent, questionId: string): QuestionView[] {
  return content.questions.filter((q) => q.type === 'calculation' && String(q.options.formula ?? '').includes(`{{${questionId}}}`));
}

const siblings = (table: 'form_sections' | 'form_questions' | 'form_rules', formId: string): Siblings => ({ table, parentColumn: 'form_id', parentId: formId });

/**
 * Runs `work` in a transaction holding the form's row lock, after checking that the form exists
 * in the workspace and is not archived, with the form's content loaded; marks the draft changed
 * afterwards, checking first that it is not over the size limit, and moves its stamp
 * (`nextStamp`: what tells every server's caches the draft changed), unless `work` answers
 * `{ changed: false }`. Every change of a form's content goes through here.
 */
async function editContent<T>(
  store: Store,
  workspaceId: string,
  formId: string,
  work: (trx: Transaction<Database>, content: FormContent) => Promise<T>,
  /** Whether the change can make the form larger (then its size is checked before commit). */
  grows = true,
): Promise<T> {
  return store.db.transaction().execute(async (trx) => {
    const form = await lockLiveForm(trx, store.dialect, workspaceId, formId);
    if (form.status === 'archived') throw new AppError('form_not_editable', 'This form is archived and read only: its questions, sections and rules cannot change.');
    const result = await work(trx, await loadContent(trx, formId));
    if ((result as { changed?: boolean } | null)?.changed !== false) {
      if (grows) await assertFormSize(trx, formId);
      await trx.updateTable('forms').set({ has_unpublished_changes: 1, updated_at: nextStamp(form.updated_at) }).where('id', '=', formId).execute();
      await formUpdated(trx, workspaceId, formId);
    }
    return result;
  });
}

/** Renumbers the rules of a form 0, 1, 2… in their current order (after rules were deleted). */
async function compactRules(trx: Transaction<Database>, formId: string): Promise<void> {
  const rows = await trx.selectFrom('form_rules').select(['id', 'position']).where('form_id', '=', formId).orderBy('position').execute();
  for (const [i, row] of rows.entries()) {
    if (Number(row.position) !== i) await trx.updateTable('form_rules').set({ position: i }).where('id', '=', row.id).execute();
  }
}

// ---- sections ----------------------------------------------------------------------------------

export interface SectionInput {
  title?: string;
  description?: string | null;
  order?: number;
}

export async function createSection(store: Store, workspaceId: string, formId: string, input: SectionInput & { title: string }): Promise<SectionView> {
  return editContent(store, workspaceId, formId, async (trx, content) => {
    assertRoom('sections', content.sections.length);
    const position = clampPosition(input.order, content.sections.length);
    await openGap(trx, siblings('form_sections', formId), position);
    const now = new Date().toISOString();
    const row: FormSectionRow = { id: newId(), form_id: formId, title: input.title, description: input.description ?? null, position, created_at: now, updated_at: now };
    await trx.insertInto('form_sections').values(row).execute();
    return toSection(row);
  });
}

export async function updateSection(store: Store, workspaceId: string, formId: string, sectionId: string, input: SectionInput): Promise<SectionView> {
  return editContent(store, workspaceId, formId, async (trx, content) => {
    const current = content.sections.find((s) => s.id === sectionId);
    if (!current) throw notFound('Section');
    const position = input.order === undefined ? current.order : Math.min(clampPosition(input.order, content.sections.length), content.sections.length - 1);
    const title = input.title ?? current.title;
    const description = input.description === undefined ? current.description : input.description;
    if (position === current.order && title === current.title && description === current.description) return { view: current, changed: false };
    await shiftBetween(trx, siblings('form_sections', formId), current.order, position);
    const updated_at = new Date().toISOString();
    await trx.updateTable('form_sections').set({ title, description, position, updated_at }).where('id', '=', sectionId).execute();
    return { view: { ...current, title, description, order: position, updatedAt: updated_at }, changed: true };
  }).then((r) => r.view);
}

/** Deletes a section: its questions stay in the form without a section; rules that target it go (foreign key). */
export async function deleteSection(store: Store, workspaceId: string, formId: string, sectionId: string): Promise<void> {
  await editContent(store, workspaceId, formId, async (trx, content) => {
    const current = content.sections.find((s) => s.id === sectionId);
    if (!current) throw notFound('Section');
    await trx.updateTable('form_questions').set({ section_id: null, updated_at: new Date().toISOString() }).where('section_id', '=', sectionId).execute();
    await trx.deleteFrom('form_sections').where('id', '=', sectionId).execute();
    await closeGap(trx, siblings('form_sections', formId), current.order);
    await compactRules(trx, formId);
  }, false);
}

// ---- questions ---------------------------------------------------------------------------------

export interface QuestionInput {
  questionText?: string;
  description?: string | null;
  type?: QuestionType;
  isRequired?: boolean;
  isPii?: boolean;
  priority?: Priority;
  context?: string | null;
  options?: Record<string, unknown>;
  sectionId?: string | null;
  order?: number;
}

/** Checks a question's section and required flag; then its options, unless `rawOptions` is `null` (kept as stored). */
function checkQuestion(
  merged: Omit<QuestionView, 'id' | 'formId' | 'order' | 'createdAt' | 'updatedAt'>,
  content: FormContent,
  selfId: string | null,
  rawOptions: unknown,
): Record<string, unknown> {
  if (merged.sectionId !== null && !content.sections.some((s) => s.id === merged.sectionId)) throw invalid('sectionId', 'is not a section of this form');
  if ((merged.type === 'heading' || merged.type === 'divider') && merged.isRequired) throw invalid('isRequired', `a ${merged.type} collects no answer and cannot be required`);
  if (rawOptions === null) return merged.options;
  const questionTypes = new Map(content.questions.filter((q) => q.id !== selfId).map((q) => [q.id, q.type]));
  return normalizeOptions(merged.type, rawOptions, { questionTypes });
}

export async function createQuestion(store: Store, workspaceId: string, formId: string, input: QuestionInput & { questionText: string; type: QuestionType }): Promise<QuestionView> {
  return editContent(store, workspaceId, formId, async (trx, content) => {
    const merged = {
      sectionId: input.sectionId ?? null,
      questionText: input.questionText,
      description: input.description ?? null,
      type: input.type,
      isRequired: input.isRequired ?? false,
      isPii: input.isPii ?? false,
      priority: input.priority ?? 'medium',
      context: input.context ?? null,
      options: {},
    };
    assertRoom('questions', content.questions.length);
    const options = checkQuestion(merged, content, null, input.options);
    const position = clampPosition(input.order, content.questions.length);
    await openGap(trx, siblings('form_questions', formId), position);
    const now = new Date().toISOString();
    const row: FormQuestionRow = {
      id: newId(),
      form_id: formId,
      section_id: merged.sectionId,
      question_text: merged.questionText,
      description: merged.description,
      type: merged.type,
      is_required: merged.isRequired ? 1 : 0,
      is_pii: merged.isPii ? 1 : 0,
      priority: merged.priority,
      context: merged.context,
      options: JSON.stringify(options),
      position,
      created_at: now,
      updated_at: now,
    };
    const view = toQuestion(row);
    assertQuestionSize(view);
    await trx.insertInto('form_questions').values(row).execute();
    return view;
  });
}

export async function updateQuestion(store: Store, workspaceId: string, formId: string, questionId: string, input: QuestionInput): Promise<QuestionView> {
  return editContent(store, workspaceId, formId, async (trx, content) => {
    const current = content.questions.find((q) => q.id === questionId);
    if (!current) throw notFound('Question');
    const { order, options: rawOptions, ...changes } = input;
    const typeChanged = changes.type !== undefined && changes.type !== current.type;
    const merged = { ...current, ...changes };
    // A new type takes its own options: the old ones only carry over when the type stays, and
    // are checked again only when sent or when the type changes.
    const options = checkQuestion(merged, content, questionId, rawOptions === undefined && !typeChanged ? null : (rawOptions ?? {}));
    const next: QuestionView = { ...merged, options };
    if (typeChanged) {
      const calculation = formulasUsing(content, questionId)[0];
      if (calculation) throw invalid('type', `the formula of calculation ${calculation.id} uses this question; change that formula first`);
    }
    // Rules that use this question must still fit it, and a move into a section must not close a loop.
    const after: FormContent = { ...content, questions: content.questions.map((q) => (q.id === questionId ? next : q)) };
    const logic = logicOf(after);
    for (const rule of content.rules.filter((r) => r.conditions.some((c) => c.sourceQuestionId === questionId))) {
      try {
        checkRule(ruleLogic(rule), logic, { cycles: false });
      } catch (error) {
        if (error instanceof AppError && error.code === 'validation_failed') {
          throw invalid(rawOptions !== undefined ? 'options' : 'type', `rule ${rule.id} uses this question and would no longer fit (${error.hint}); change or delete the rule first`);
        }
        throw error;
      }
    }
    assertNoCycle(logic);
    // A text question's `contains` conditions read its whole answer: a new type can make more of them.
    if (typeChanged) assertLogicLimits(logic, 'type');
    const position = order === undefined ? current.order : Math.min(clampPosition(order, content.questions.length), content.questions.length - 1);
    const same = position === current.order && JSON.stringify({ ...next, updatedAt: '' }) === JSON.stringify({ ...current, updatedAt: '' });
    if (same) return { view: current, changed: false };
    assertQuestionSize(next);
    await shiftBetween(trx, siblings('form_questions', formId), current.order, position);
    const updated_at = new Date().toISOString();
    await trx
      .updateTable('form_questions')
      .set({
        section_id: next.sectionId,
        question_text: next.questionText,
        description: next.description,
        type: next.type,
        is_required: next.isRequired ? 1 : 0,
        is_pii: next.isPii ? 1 : 0,
        priority: next.priority,
        context: next.context,
        options: JSON.stringify(next.options),
        position,
        updated_at,
      })
      .where('id', '=', questionId)
      .execute();
    return { view: { ...next, order: position, updatedAt: updated_at }, changed: true };
  }).then((r) => r.view);
}

/** Deletes a question and every rule that names it, as a condition's source or as the target. */
export async function deleteQuestion(store: Store, workspaceId: string, formId: string, questionId: string): Promise<void> {
  await editContent(store, workspaceId, formId, async (trx, content) => {
    const current = content.questions.find((q) => q.id === questionId);
    if (!current) throw notFound('Question');
    const calculation = formulasUsing(content, questionId)[0];
    if (calculation) throw invalid('', `the formula of calculation ${calculation.id} uses this question; change that formula first`);
    const using = content.rules.filter((r) => r.conditions.some((c) => c.sourceQuestionId === questionId)).map((r) => r.id);
    if (using.length > 0) await trx.deleteFrom('form_rules').where('id', 'in', using).execute();
    await trx.deleteFrom('form_questions').where('id', '=', questionId).execute();
    await closeGap(trx, siblings('form_questions', formId), current.order);
    await compactRules(trx, formId);
  }, false);
}

// ---- rules -------------------------------------------------------------------------------------

function isShortForm(input: RuleInput): boolean {
  return input.sourceQuestionId !== undefined || input.operator !== undefined || input.value !== undefined;
}

export async function createRule(store: Store, workspaceId: string, formId: string, input: RuleInput & { order?: number }): Promise<RuleView> {
  return editContent(store, workspaceId, formId, async (trx, content) => {
    assertRoom('rules', content.rules.length);
    const merged = mergeRule(input, null);
    const id = newId();
    const logic = logicOf(content);
    checkRule({ id, ...merged }, logic, { shortForm: isShortForm(input) });
    assertLogicLimits({ ...logic, rules: [...logic.rules, { id, ...merged }] });
    const position = clampPosition(input.order, content.rules.length);
    await openGap(trx, siblings('form_rules', formId), position);
    const now = new Date().toISOString();
    const row: FormRuleRow = {
      id,
      form_id: formId,
      action: merged.action,
      target_question_id: merged.targetQuestionId,
      target_section_id: merged.targetSectionId,
      match: merged.match,
      conditions: JSON.stringify(merged.conditions.map((c) => ({ sourceQuestionId: c.sourceQuestionId, operator: c.operator, value: c.value ?? null }))),
      position,
      created_at: now,
      updated_at: now,
    };
    await trx.insertInto('form_rules').values(row).execute();
    return toRule(row);
  });
}

export async function updateRule(store: Store, workspaceId: string, formId: string, ruleId: string, input: RuleInput & { order?: number }): Promise<RuleView> {
  return editContent(store, workspaceId, formId, async (trx, content) => {
    const current = content.rules.find((r) => r.id === ruleId);
    if (!current) throw notFound('Rule');
    const merged = mergeRule(input, ruleLogic(current));
    const logic = logicOf(content, ruleId);
    checkRule({ id: ruleId, ...merged }, logic, { shortForm: isShortForm(input) });
    assertLogicLimits({ ...logic, rules: [...logic.rules, { id: ruleId, ...merged }] });
    const conditions = merged.conditions.map((c) => ({ sourceQuestionId: c.sourceQuestionId, operator: c.operator, value: c.value ?? null }));
    const position = input.order === undefined ? current.order : Math.min(clampPosition(input.order, content.rules.length), content.rules.length - 1);
    const next = { ...current, action: merged.action, targetQuestionId: merged.targetQuestionId, targetSectionId: merged.targetSectionId, match: merged.match, conditions, order: position };
    if (JSON.stringify(next) === JSON.stringify(current)) return { view: current, changed: false };
    await shiftBetween(trx, siblings('form_rules', formId), current.order, position);
    const updated_at = new Date().toISOString();
    await trx
      .updateTable('form_rules')
      .set({ action: next.action, target_question_id: next.targetQuestionId, target_section_id: next.targetSectionId, match: next.match, conditions: JSON.stringify(conditions), position, updated_at })
      .where('id', '=', ruleId)
      .execute();
    return { view: { ...next, updatedAt: updated_at }, changed: true };
  }).then((r) => r.view);
}

export async function deleteRule(store: Store, workspaceId: string, formId: string, ruleId: string): Promise<void> {
  await editContent(store, workspaceId, formId, async (trx, content) => {
    const current = content.rules.find((r) => r.id === ruleId);
    if (!current) throw notFound('Rule');
    await trx.deleteFrom('form_rules').where('id', '=', ruleId).execute();
    await closeGap(trx, siblings('form_rules', formId), current.order);
  }, false);
}

/** How many questions each of these forms has. */
export async function questionCounts(db: Kysely<Database>, formIds: string[]): Promise<Map<string, number>> {
  if (formIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('form_questions')
    .select(['form_id', (eb) => eb.fn.countAll().as('n')])
    .where('form_id', 'in', formIds)
    .groupBy('form_id')
    .execute();
  return new Map(rows.map((r) => [r.form_id, Number(r.n)]));
}

