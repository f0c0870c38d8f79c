import type { Transaction } from 'kysely';
import { AppError, invalid } from '../../domain/errors.js';
import { count, LIMITS } from '../../domain/limits.js';
import { referenceIndex } from '../../domain/question-options.js';
import { formulaProblem, normalizeOptions, QUESTION_TYPE_SPECS } from '../../domain/question-types.js';
import type { RuleInput } from '../../domain/rules.js';
import { formBytes, loadContent, type FormContent, type QuestionView } from '../../store/form-content.js';
import { updateFormRow } from '../../store/forms.js';
import { lockLiveForm, nextStamp } from '../../store/live.js';
import type { Database, FormQuestionRow } from '../../store/schema.js';
import { formUpdated } from '../events.js';
import type { Deps } from '../deps.js';

// What the use cases on a form's sections, questions and rules share.

const ROOM = { questions: LIMITS.questionsPerForm, sections: LIMITS.sectionsPerForm, rules: LIMITS.rulesPerForm } as const;

export function assertRoom(kind: keyof typeof ROOM, n: number): void {
  if (n >= ROOM[kind]) throw invalid('', `a form holds at most ${count(ROOM[kind])} ${kind} (the limit of ${kind} per form); this one is full`);
}

/** A question as the API returns it is at most `LIMITS.questionBytes` of JSON (`413`). */
export function assertQuestionSize(view: QuestionView): void {
  const bytes = Buffer.byteLength(JSON.stringify(view));
  if (bytes > LIMITS.questionBytes) {
    throw new AppError('payload_too_large', `The question would be ${count(bytes)} bytes as JSON; a question may be at most ${count(LIMITS.questionBytes)} bytes (the question size limit). Shorten its options (choices, labels) or texts.`);
  }
}

/** A form that grew past `LIMITS.formBytes`: `413`, the transaction rolled back by the caller. */
async function assertFormSize(trx: Transaction<Database>, formId: string): Promise<void> {
  const bytes = await formBytes(trx, formId);
  if (bytes > LIMITS.formBytes) {
    throw new AppError('payload_too_large', `The form would hold ${count(bytes)} bytes of questions, sections and rules as JSON; a form may hold at most ${count(LIMITS.formBytes)} bytes (the form size limit). Nothing was changed; split the form or shorten its content.`);
  }
}

/**
 * After a change of the questions (`after`), every calculation's formula must still resolve: each
 * reference names exactly one number-like question, by id or by text. A change that would break
 * one (deleting or retyping a question it uses, renaming a question it names by text, adding a
 * question with a text it names) is refused at `path`, naming the calculation.
 */
export function assertFormulas(after: readonly QuestionView[], path: string): void {
  const calculations = after.filter((q) => QUESTION_TYPE_SPECS[q.type].value === 'computed');
  if (calculations.length === 0) return;
  const index = referenceIndex(after);
  for (const calculation of calculations) {
    const problem = formulaProblem(String(calculation.options.formula), index);
    if (problem) throw invalid(path, `the formula of calculation ${calculation.id} uses this question and would break: it ${problem}; change that formula first`);
  }
}

/**
 * Runs `work` in a transaction holding the form's row lock, after checking that the form exists
 * in the workspace and is not archived, with the form's content loaded; marks the draft changed
 * afterwards, checking first that it is not over the size limit, and moves its stamp
 * (`nextStamp`: what tells every server's caches the draft changed), unless `work` answers
 * `{ changed: false }`. Every change of a form's content goes through here: its one
 * transaction, where the change commits.
 */
export async function editFormDraft<T>(
  deps: Pick<Deps, 'store' | 'clock'>,
  workspaceId: string,
  formId: string,
  work: (trx: Transaction<Database>, content: FormContent) => Promise<T>,
  /** Whether the change can make the form larger (then its size is checked before commit). */
  grows = true,
): Promise<T> {
  const { store, clock } = deps;
  return store.db.transaction().execute(async (trx) => {
    const form = await lockLiveForm(trx, store.dialect, workspaceId, formId);
    if (form.status === 'archived') throw new AppError('form_not_editable', 'This form is archived and read only: its questions, sections and rules cannot change.');
    const result = await work(trx, await loadContent(trx, formId));
    if ((result as { changed?: boolean } | null)?.changed !== false) {
      if (grows) await assertFormSize(trx, formId);
      await updateFormRow(trx, formId, { has_unpublished_changes: 1, updated_at: nextStamp(form.updated_at, clock.now()) });
      await formUpdated(trx, workspaceId, formId);
    }
    return result;
  });
}

/** Checks a question's section and required flag; then its options, unless `rawOptions` is `null` (kept as stored). */
export function checkQuestion(
  merged: Omit<QuestionView, 'id' | 'formId' | 'order' | 'createdAt' | 'updatedAt'>,
  content: FormContent,
  selfId: string,
  rawOptions: unknown,
): Record<string, unknown> {
  if (merged.sectionId !== null && !content.sections.some((s) => s.id === merged.sectionId)) throw invalid('sectionId', 'is not a section of this form');
  if (QUESTION_TYPE_SPECS[merged.type].value === 'none' && merged.isRequired) throw invalid('isRequired', `a ${merged.type} collects no answer and cannot be required`);
  if (rawOptions === null) return merged.options;
  // Formulas resolve among the questions as they will be, this one included.
  const self = { id: selfId, type: merged.type, questionText: merged.questionText };
  const questions = [...content.questions.filter((q) => q.id !== selfId), self];
  return normalizeOptions(merged.type, rawOptions, { questions });
}

export function isShortForm(input: RuleInput): boolean {
  return input.sourceQuestionId !== undefined || input.operator !== undefined || input.value !== undefined;
}

/** The stored columns of a question's own values (create and update write the same ones). */
export function questionColumns(q: {
  sectionId: string | null;
  questionText: string;
  description: string | null;
  type: FormQuestionRow['type'];
  isRequired: boolean;
  isPii: boolean;
  priority: FormQuestionRow['priority'];
  context: FormQuestionRow['context'];
}, options: unknown): Pick<FormQuestionRow, 'section_id' | 'question_text' | 'description' | 'type' | 'is_required' | 'is_pii' | 'priority' | 'context' | 'options'> {
  return {
    section_id: q.sectionId,
    question_text: q.questionText,
    description: q.description,
    type: q.type,
    is_required: q.isRequired ? 1 : 0,
    is_pii: q.isPii ? 1 : 0,
    priority: q.priority,
    context: q.context,
    options: JSON.stringify(options),
  };
}
