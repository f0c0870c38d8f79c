import { isoNow } from '../../domain/clock.js';
import { newId } from '../../domain/ids.js';
import { assertLogicLimits, checkRule, mergeRule, type RuleInput } from '../../domain/rules.js';
import { contentSiblings, insertRule, logicOf, toRule, type RuleView } from '../../store/form-content.js';
import { clampPosition, openGap } from '../../store/ordering.js';
import type { FormRuleRow } from '../../store/schema.js';
import type { Deps, Principal } from '../deps.js';
import { assertRoom, editFormDraft, isShortForm } from './form-draft.js';

/** `POST /forms/{id}/rules` (short or full form). */
export async function createRule(deps: Deps, principal: Principal, { formId, rule: input }: { formId: string; rule: RuleInput & { order?: number } }): Promise<RuleView> {
  return editFormDraft(deps, principal.workspaceId, formId, async (trx, content) => {
    assertRoom('rules', content.rules.length);
    const merged = mergeRule(input, null);
    const id = newId();
    const logic = logicOf(content);
    checkRule({ id, ...merged }, logic, { shortForm: isShortForm(input) });
    assertLogicLimits({ ...logic, rules: [...logic.rules, { id, ...merged }] });
    const position = clampPosition(input.order, content.rules.length);
    await openGap(trx, contentSiblings('form_rules', formId), position);
    const now = isoNow(deps.clock);
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
    await insertRule(trx, row);
    return toRule(row);
  });
}
