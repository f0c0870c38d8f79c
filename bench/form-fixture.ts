/**
 * The large form of the benchmarks: 2,000 questions in 200 sections with 2,000 rules (chains of
 * dependent questions, fan-outs from one answer to many targets, rules on sections), generated, and
 * written straight into a form's tables.
 */
import { newId } from '../src/domain/ids.js';
import type { LogicForm, LogicQuestion, LogicRule } from '../src/domain/logic.js';
import type { QuestionType } from '../src/domain/questions.js';
import type { Store } from '../src/store/db.js';

/** One block: 2,000 questions in 200 sections with 2,000 rules. */
export function makeBlock(): { form: LogicForm; answers: Record<string, unknown> } {
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
export function makeForm(scale: number): { form: LogicForm; answers: Record<string, unknown> } {
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


/**
 * Writes `form` as the content of the (empty) form `formId`, with UUIDs for the generated ids;
 * answers the mapping from generated ids to UUIDs.
 */
export async function insertFormContent(store: Store, formId: string, form: LogicForm): Promise<(id: string) => string> {
  const ids = new Map<string, string>();
  const idOf = (x: string) => ids.get(x) ?? (ids.set(x, newId()), ids.get(x)!);
  const now = new Date().toISOString();
  await store.db.transaction().execute(async (trx) => {
    for (const [i, section] of form.sections.entries()) {
      await trx.insertInto('form_sections').values({ id: idOf(section.id), form_id: formId, title: section.id, description: null, position: i, created_at: now, updated_at: now }).execute();
    }
    for (const [i, q] of form.questions.entries()) {
      await trx.insertInto('form_questions').values({
        id: idOf(q.id), form_id: formId, section_id: q.sectionId ? idOf(q.sectionId) : null, question_text: q.id, description: null, type: q.type,
        is_required: q.isRequired ? 1 : 0, is_pii: 0, priority: 'medium', context: null, options: JSON.stringify(q.options), position: i, created_at: now, updated_at: now,
      }).execute();
    }
    for (const [i, r] of form.rules.entries()) {
      await trx.insertInto('form_rules').values({
        id: idOf(r.id), form_id: formId, action: r.action, target_question_id: r.targetQuestionId ? idOf(r.targetQuestionId) : null,
        target_section_id: r.targetSectionId ? idOf(r.targetSectionId) : null, match: r.match,
        conditions: JSON.stringify(r.conditions.map((c) => ({ ...c, sourceQuestionId: idOf(c.sourceQuestionId), value: c.value ?? null }))), position: i, created_at: now, updated_at: now,
      }).execute();
    }
  });
  return idOf;
}
