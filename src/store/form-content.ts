import { CompiledQuery, sql, type Kysely, type Transaction } from 'kysely';
import type { LogicForm, LogicRule } from '../domain/logic.js';
import type { Priority, QuestionType } from '../domain/questions.js';
import type { Dialect, Store } from './db.js';
import type { Siblings } from './ordering.js';
import type { Database, FormQuestionRow, FormRow, FormRuleRow, FormSectionRow } from './schema.js';
import { preparedQuery } from './prepared.js';


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

export const toSection = (r: FormSectionRow): SectionView => ({
  id: r.id, formId: r.form_id, title: r.title, description: r.description, order: Number(r.position), createdAt: r.created_at, updatedAt: r.updated_at,
});
export const toQuestion = (r: FormQuestionRow): QuestionView => ({
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
export const toRule = (r: FormRuleRow): RuleView => ({
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
export type ContentKind = keyof typeof CONTENT_TABLES;
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

export function ruleLogic(r: RuleView): LogicRule {
  return { id: r.id, action: r.action, targetQuestionId: r.targetQuestionId, targetSectionId: r.targetSectionId, match: r.match, conditions: r.conditions as LogicRule['conditions'] };
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


// ---- writes (the use cases in src/services/form-content/ decide what and when) -----------------

export async function insertSection(trx: Transaction<Database>, row: FormSectionRow): Promise<void> {
  await trx.insertInto('form_sections').values(row).execute();
}

export async function updateSectionRow(trx: Transaction<Database>, id: string, changes: Partial<FormSectionRow>): Promise<void> {
  await trx.updateTable('form_sections').set(changes).where('id', '=', id).execute();
}

export async function deleteSectionRow(trx: Transaction<Database>, id: string): Promise<void> {
  await trx.deleteFrom('form_sections').where('id', '=', id).execute();
}

/** The questions of a section leave it (they stay in the form, without a section). */
export async function detachQuestions(trx: Transaction<Database>, sectionId: string, now: string): Promise<void> {
  await trx.updateTable('form_questions').set({ section_id: null, updated_at: now }).where('section_id', '=', sectionId).execute();
}

export async function insertQuestion(trx: Transaction<Database>, row: FormQuestionRow): Promise<void> {
  await trx.insertInto('form_questions').values(row).execute();
}

export async function updateQuestionRow(trx: Transaction<Database>, id: string, changes: Partial<FormQuestionRow>): Promise<void> {
  await trx.updateTable('form_questions').set(changes).where('id', '=', id).execute();
}

export async function deleteQuestionRow(trx: Transaction<Database>, id: string): Promise<void> {
  await trx.deleteFrom('form_questions').where('id', '=', id).execute();
}

export async function insertRule(trx: Transaction<Database>, row: FormRuleRow): Promise<void> {
  await trx.insertInto('form_rules').values(row).execute();
}

export async function updateRuleRow(trx: Transaction<Database>, id: string, changes: Partial<FormRuleRow>): Promise<void> {
  await trx.updateTable('form_rules').set(changes).where('id', '=', id).execute();
}

export async function deleteRuleRows(trx: Transaction<Database>, ids: string[]): Promise<void> {
  if (ids.length > 0) await trx.deleteFrom('form_rules').where('id', 'in', ids).execute();
}

/** Renumbers the rules of a form 0, 1, 2… in their current order (after rules were deleted). */
export async function compactRules(trx: Transaction<Database>, formId: string): Promise<void> {
  const rows = await trx.selectFrom('form_rules').select(['id', 'position']).where('form_id', '=', formId).orderBy('position').execute();
  for (const [i, row] of rows.entries()) {
    if (Number(row.position) !== i) await trx.updateTable('form_rules').set({ position: i }).where('id', '=', row.id).execute();
  }
}

/** The siblings (for ordering) of a form's sections, questions or rules. */
export const contentSiblings = (table: 'form_sections' | 'form_questions' | 'form_rules', formId: string): Siblings => ({ table, parentColumn: 'form_id', parentId: formId });
