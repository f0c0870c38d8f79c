import { AppError, invalid } from './errors.js';
import { count, LIMITS } from './limits.js';
import { findCycle, isTextSearchOn, OPERATORS, valueProblem, type Condition, type LogicForm, type LogicQuestion, type LogicRule, type Operator } from './logic.js';

/** A rule as a client sends it: the short form (one condition) or the full form, all keys optional on PUT. */
export interface RuleInput {
  action?: 'show' | 'hide';
  targetQuestionId?: string | null;
  targetSectionId?: string | null;
  match?: 'all' | 'any';
  conditions?: Array<{ sourceQuestionId: string; operator: Operator; value?: unknown }>;
  sourceQuestionId?: string;
  operator?: Operator;
  value?: unknown;
}

export const MAX_CONDITIONS = LIMITS.conditionsPerRule;

/**
 * Merges an input (short or full form) over the current rule (none on create) into the full form.
 * Sent conditions replace the old ones; a sent target replaces the old target.
 */
export function mergeRule(input: RuleInput, current: Omit<LogicRule, 'id'> | null): Omit<LogicRule, 'id'> {
  const short = input.sourceQuestionId !== undefined || input.operator !== undefined || input.value !== undefined;
  if (short && input.conditions !== undefined) {
    throw invalid('conditions', 'send either the short form (sourceQuestionId, operator, value) or conditions, not both');
  }
  if (short && input.match !== undefined) throw invalid('match', 'goes with conditions (the full form); the short form has one condition');
  let conditions: Condition[] | undefined;
  if (short) {
    // On PUT, keys of the short form that are not sent come from the rule's one condition.
    const only = current?.conditions.length === 1 ? current.conditions[0] : undefined;
    const sourceQuestionId = input.sourceQuestionId ?? only?.sourceQuestionId;
    const operator = input.operator ?? only?.operator;
    if (sourceQuestionId === undefined) throw invalid('sourceQuestionId', 'is required with operator and value');
    if (operator === undefined) throw invalid('operator', 'is required with sourceQuestionId');
    const emptiness = operator === 'is_empty' || operator === 'is_not_empty';
    const value = input.value !== undefined ? input.value : emptiness || input.operator !== undefined ? undefined : only?.value;
    conditions = [{ sourceQuestionId, operator, value }];
  } else if (input.conditions !== undefined) {
    conditions = input.conditions.map((c) => ({ sourceQuestionId: c.sourceQuestionId, operator: c.operator, value: c.value }));
  }
  const targetGiven = input.targetQuestionId !== undefined || input.targetSectionId !== undefined;
  const targetQuestionId = targetGiven ? (input.targetQuestionId ?? null) : (current?.targetQuestionId ?? null);
  const targetSectionId = targetGiven ? (input.targetSectionId ?? null) : (current?.targetSectionId ?? null);
  const merged = {
    action: input.action ?? current?.action,
    targetQuestionId,
    targetSectionId,
    match: input.match ?? (short ? 'all' : current?.match ?? 'all'),
    conditions: conditions ?? current?.conditions,
  };
  if (merged.action === undefined) throw invalid('action', 'is required: "show" or "hide"');
  if (merged.conditions === undefined) throw invalid('conditions', 'is required: send sourceQuestionId, operator and value, or conditions');
  return merged as Omit<LogicRule, 'id'>;
}

function label(form: LogicForm & { texts?: ReadonlyMap<string, string> }, node: string): string {
  const [kind, id] = [node.slice(0, 1), node.slice(2)];
  const text = form.texts?.get(id);
  const shown = text ? ` "${text.length > 40 ? `${text.slice(0, 37)}…` : text}"` : '';
  return kind === 'q' ? `question ${id}${shown}` : `section ${id}${shown}`;
}

/**
 * Checks a rule against the form it belongs to (whose `rules` are the other rules): exactly one
 * target of this form, sources of this form, operators and values that fit the source questions,
 * and no loop of visibility. `texts` names questions and sections in a loop's hint.
 */
export function checkRule(
  rule: LogicRule,
  form: LogicForm & { texts?: ReadonlyMap<string, string> },
  options: { shortForm?: boolean; cycles?: boolean } = {},
): void {
  // In the short form the client wrote `sourceQuestionId`, `operator` and `value`, not conditions[0].…
  const key = (i: number, name: string) => (options.shortForm ? name : `conditions[${i}].${name}`);
  const questions = new Map<string, LogicQuestion>(form.questions.map((q) => [q.id, q]));
  const sections = new Set(form.sections.map((s) => s.id));
  if ((rule.targetQuestionId === null) === (rule.targetSectionId === null)) {
    throw invalid('targetQuestionId', 'give exactly one target: targetQuestionId or targetSectionId');
  }
  if (rule.targetQuestionId !== null && !questions.has(rule.targetQuestionId)) throw invalid('targetQuestionId', 'is not a question of this form');
  if (rule.targetSectionId !== null && !sections.has(rule.targetSectionId)) throw invalid('targetSectionId', 'is not a section of this form');
  if (rule.conditions.length === 0) throw invalid('conditions', 'must have at least 1 item');
  if (rule.conditions.length > MAX_CONDITIONS) throw invalid('conditions', `must have at most ${MAX_CONDITIONS} items`);
  rule.conditions.forEach((condition, i) => {
    const source = questions.get(condition.sourceQuestionId);
    if (!source) throw invalid(key(i, 'sourceQuestionId'), 'is not a question of this form');
    if (!OPERATORS.includes(condition.operator)) throw invalid(key(i, 'operator'), `must be one of ${OPERATORS.join(', ')}`);
    if (condition.sourceQuestionId === rule.targetQuestionId) {
      throw new AppError('rule_cycle', `The rule's target is its own source: ${label(form, `q:${condition.sourceQuestionId}`)} cannot decide its own visibility.`);
    }
    const problem = valueProblem(source, condition.operator, condition.value);
    if (problem) {
      const where = problem.includes('cannot be a condition') ? 'sourceQuestionId' : problem.startsWith('operator') ? 'operator' : 'value';
      throw invalid(key(i, where), problem);
    }
  });
  if (options.cycles !== false) assertNoCycle({ ...form, rules: [...form.rules, rule] });
}

/** `400 rule_cycle` naming the loop, when the form's visibility depends on itself anywhere. */
export function assertNoCycle(form: LogicForm & { texts?: ReadonlyMap<string, string> }): void {
  const cycle = findCycle(form);
  if (cycle) {
    throw new AppError('rule_cycle', `These rules make visibility depend on itself: ${cycle.map((node) => label(form, node)).join(' → ')}.`);
  }
}

/**
 * The limits on a form's logic as a whole (`400` naming the limit): conditions of all its rules
 * together, and of those the substring searches through text answers, each of which reads its
 * whole answer in an evaluation.
 */
export function assertLogicLimits(form: LogicForm, at = 'conditions'): void {
  const questions = new Map<string, LogicQuestion>(form.questions.map((q) => [q.id, q]));
  let conditions = 0;
  let searches = 0;
  for (const rule of form.rules) {
    conditions += rule.conditions.length;
    for (const c of rule.conditions) {
      const source = questions.get(c.sourceQuestionId);
      if (source && isTextSearchOn(source, c.operator)) searches++;
    }
  }
  if (conditions > LIMITS.conditionsPerForm) {
    throw invalid(at, `the form's rules would hold ${count(conditions)} conditions together; a form holds at most ${count(LIMITS.conditionsPerForm)} (the limit of conditions per form)`);
  }
  if (searches > LIMITS.textSearchesPerForm) {
    throw invalid(at, `the form's rules would hold ${count(searches)} contains/not_contains conditions on text questions; a form holds at most ${count(LIMITS.textSearchesPerForm)} (the limit of text searches per form)`);
  }
}
