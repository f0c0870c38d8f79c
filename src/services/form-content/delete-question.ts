import { invalid, notFound } from '../../domain/errors.js';
import { compactRules, contentSiblings, deleteQuestionRow, deleteRuleRows } from '../../store/form-content.js';
import { closeGap } from '../../store/ordering.js';
import type { Deps, Principal } from '../deps.js';
import { editFormDraft, formulasUsing } from './form-draft.js';

/** Deletes a question and every rule that names it, as a condition's source or as the target. */
export async function deleteQuestion(deps: Deps, principal: Principal, { formId, questionId }: { formId: string; questionId: string }): Promise<void> {
  await editFormDraft(deps, principal.workspaceId, formId, async (trx, content) => {
    const current = content.questions.find((q) => q.id === questionId);
    if (!current) throw notFound('Question');
    const calculation = formulasUsing(content, questionId)[0];
    if (calculation) throw invalid('', `the formula of calculation ${calculation.id} uses this question; change that formula first`);
    const using = content.rules.filter((r) => r.conditions.some((c) => c.sourceQuestionId === questionId)).map((r) => r.id);
    await deleteRuleRows(trx, using);
    await deleteQuestionRow(trx, questionId);
    await closeGap(trx, contentSiblings('form_questions', formId), current.order);
    await compactRules(trx, formId);
  }, false);
}
