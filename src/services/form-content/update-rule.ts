import { isoNow } from '../../domain/clock.js';
import { notFound } from '../../domain/errors.js';
import { assertLogicLimits, checkRule, mergeRule, type RuleInput } from '../../domain/rules.js';
import { contentSiblings, logicOf, ruleLogic, updateRuleRow, type RuleView } from '../../store/form-content.js';
import { clampPosition, shiftBetween } from '../../store/ordering.js';
import type { Deps, Principal } from '../deps.js';
import { editFormDraft, isShortForm } from './form-draft.js';

/** `PUT /forms/{id}/rules/{rid}`: either form; sent conditions replace the old ones. */
export async function updateRule(
  deps: Deps,
  principal: Principal,
  { formId, ruleId, rule: input }: { formId: string; ruleId: string; rule: RuleInput & { order?: number } },
): Promise<RuleView> {
  return editFormDraft(deps, principal.workspaceId, formId, async (trx, content) => {
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
    await shiftBetween(trx, contentSiblings('form_rules', formId), current.order, position);
    const updated_at = isoNow(deps.clock);
    await updateRuleRow(trx, ruleId, { action: next.action, target_question_id: next.targetQuestionId, target_section_id: next.targetSectionId, match: next.match, conditions: JSON.stringify(conditions), position, updated_at });
    return { view: { ...next, updatedAt: updated_at }, changed: true };
  }).then((r) => r.view);
}
