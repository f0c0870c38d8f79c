import { notFound } from '../../domain/errors.js';
import { contentSiblings, deleteRuleRows } from '../../store/form-content.js';
import { closeGap } from '../../store/ordering.js';
import type { Deps, Principal } from '../deps.js';
import { editFormDraft } from './form-draft.js';

/** `DELETE /forms/{id}/rules/{rid}`. */
export async function deleteRule(deps: Deps, principal: Principal, { formId, ruleId }: { formId: string; ruleId: string }): Promise<void> {
  await editFormDraft(deps, principal.workspaceId, formId, async (trx, content) => {
    const current = content.rules.find((r) => r.id === ruleId);
    if (!current) throw notFound('Rule');
    await deleteRuleRows(trx, [ruleId]);
    await closeGap(trx, contentSiblings('form_rules', formId), current.order);
  }, false);
}
