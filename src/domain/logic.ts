import { isCalendarDate } from './fields.js';
import { answerKind, choicesOf, type AnswerKind, type QuestionType } from './questions.js';

/**
 * The show/hide logic of forms: one pure engine for write-time checks (which operator fits which
 * question, cycles) and for evaluation. API.md, Rules:
 * - a target with `show` rules is hidden unless one of them holds; a `hide` rule that holds hides it;
 * - a hidden section hides its questions;
 * - the answer of a hidden question counts as empty in every condition (so hiding cascades).
 */
export const OPERATORS = [
  'equals', 'not_equals', 'contains', 'not_contains', 'greater_than', 'greater_or_equal',
  'less_than', 'less_or_equal', 'is_empty', 'is_not_empty', 'is_any_of',
] as const;
export type Operator = (typeof OPERATORS)[number];

export interface Condition {
  sourceQuestionId: string;
  operator: Operator;
  value?: unknown;
}

export interface LogicRule {
  id: string;
  action: 'show' | 'hide';
  targetQuestionId: string | null;
  targetSectionId: string | null;
  match: 'all' | 'any';
  conditions: Condition[];
}

export interface LogicQuestion {
  id: string;
  type: QuestionType;
  sectionId: string | null;
  isRequired: boolean;
  options: Record<string, unknown>;
}

export interface LogicForm {
  sections: Array<{ id: string }>;
  questions: LogicQuestion[];
  rules: LogicRule[];
}

/** Most items an `is_any_of` list may hold. */
export const MAX_ANY_OF = 500;

const ORDERED: Operator[] = ['greater_than', 'greater_or_equal', 'less_than', 'less_or_equal'];
const EMPTINESS: Operator[] = ['is_empty', 'is_not_empty'];

/** Which operators a condition on an answer of each kind may use. */
export const OPERATORS_BY_KIND: Record<AnswerKind, readonly Operator[]> = {
  text: ['equals', 'not_equals', 'contains', 'not_contains', 'is_any_of', ...EMPTINESS],
  number: ['equals', 'not_equals', ...ORDERED, 'is_any_of', ...EMPTINESS],
  choice: ['equals', 'not_equals', 'is_any_of', ...EMPTINESS],
  choices: ['contains', 'not_contains', 'is_any_of', ...EMPTINESS],
  boolean: ['equals', 'not_equals', ...EMPTINESS],
  date: ['equals', 'not_equals', ...ORDERED, 'is_any_of', ...EMPTINESS],
  time: ['equals', 'not_equals', ...ORDERED, 'is_any_of', ...EMPTINESS],
  structured: [...EMPTINESS],
  none: [],
};

/** An answer is empty when it is missing, `null`, `""`, only white space, or `[]`. */
export function isEmpty(answer: unknown): boolean {
  if (answer === undefined || answer === null) return true;
  if (typeof answer === 'string') return answer.trim().length === 0;
  if (Array.isArray(answer)) return answer.length === 0;
  return false;
}

const TIME = /^([01]\d|2[0-3]):[0-5]\d$/;

/** Why `value` cannot be compared with answers of `question` under `operator`, or `null` when it can. */
export function valueProblem(question: LogicQuestion, operator: Operator, value: unknown): string | null {
  const kind = answerKind(question.type, question.options);
  if (!OPERATORS_BY_KIND[kind].includes(operator)) {
    const allowed = OPERATORS_BY_KIND[kind];
    return allowed.length === 0
      ? `a ${question.type} question collects no answer and cannot be a condition's source`
      : `operator ${operator} does not fit a ${question.type} question (use ${allowed.join(', ')})`;
  }
  if (EMPTINESS.includes(operator)) return value === undefined || value === null ? null : `takes no value with ${operator}`;
  if (operator === 'is_any_of') {
    if (!Array.isArray(value) || value.length === 0) return 'must be a non-empty array for is_any_of';
    if (value.length > MAX_ANY_OF) return `must have at most ${MAX_ANY_OF} items for is_any_of`;
    if (new Set(value).size !== value.length) return 'must not repeat an item';
    for (const item of value) {
      const problem = scalarProblem(question, kind === 'choices' ? 'choice' : kind, item);
      if (problem) return `every item ${problem}`;
    }
    return null;
  }
  return scalarProblem(question, kind === 'choices' ? 'choice' : kind, value);
}

/** Why `value` is not a single value of `kind` for this question (a rule's value, or an answer), or `null`. */
export function scalarProblem(question: Pick<LogicQuestion, 'type' | 'options'>, kind: AnswerKind, value: unknown): string | null {
  switch (kind) {
    case 'text':
      return typeof value === 'string' ? null : 'must be a string';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? null : 'must be a number';
    case 'boolean':
      return typeof value === 'boolean' ? null : 'must be true or false';
    case 'date':
      return typeof value === 'string' && isCalendarDate(value) ? null : 'must be a date YYYY-MM-DD';
    case 'time':
      return typeof value === 'string' && TIME.test(value) ? null : 'must be a time HH:MM';
    case 'choice': {
      const choices = choicesOf(question.type, question.options);
      return typeof value === 'string' && choices.includes(value) ? null : `must be one of the choices (${choices.map((c) => JSON.stringify(c)).join(', ')})`;
    }
    default:
      return 'is not allowed';
  }
}

/** Whether a condition holds for an (effective) answer. */
export function conditionHolds(kind: AnswerKind, operator: Operator, expected: unknown, answer: unknown): boolean {
  const empty = isEmpty(answer);
  if (operator === 'is_empty') return empty;
  if (operator === 'is_not_empty') return !empty;
  if (empty) return operator === 'not_equals' || operator === 'not_contains';
  switch (operator) {
    case 'equals':
      return answer === expected;
    case 'not_equals':
      return answer !== expected;
    case 'contains':
    case 'not_contains': {
      const found = Array.isArray(answer)
        ? answer.includes(expected)
        : typeof answer === 'string' && typeof expected === 'string' && answer.toLowerCase().includes(expected.toLowerCase());
      return operator === 'contains' ? found : !found;
    }
    case 'is_any_of': {
      const list = expected instanceof Set ? expected : new Set(expected as unknown[]);
      return Array.isArray(answer) ? answer.some((a) => list.has(a)) : list.has(answer);
    }
    default: {
      // Ordered comparisons: numbers as numbers; dates and times (fixed-width text) as text.
      if (kind === 'number' ? typeof answer !== 'number' : typeof answer !== 'string') return false;
      const a = answer as number | string;
      const b = expected as number | string;
      if (operator === 'greater_than') return a > b;
      if (operator === 'greater_or_equal') return a >= b;
      if (operator === 'less_than') return a < b;
      return a <= b;
    }
  }
}

type NodeId = string; // `q:<id>` or `s:<id>`
const q = (id: string): NodeId => `q:${id}`;
const s = (id: string): NodeId => `s:${id}`;

/**
 * Edges of visibility dependence: a rule's target depends on each of its sources, and a question
 * depends on its section. Nodes are every section and question.
 */
function dependencies(form: LogicForm): Map<NodeId, NodeId[]> {
  const out = new Map<NodeId, NodeId[]>();
  const edge = (from: NodeId, to: NodeId) => {
    const list = out.get(from);
    if (list) list.push(to);
    else out.set(from, [to]);
  };
  for (const section of form.sections) out.set(s(section.id), out.get(s(section.id)) ?? []);
  for (const question of form.questions) {
    out.set(q(question.id), out.get(q(question.id)) ?? []);
    if (question.sectionId) edge(s(question.sectionId), q(question.id));
  }
  for (const rule of form.rules) {
    const target = rule.targetQuestionId ? q(rule.targetQuestionId) : s(rule.targetSectionId!);
    for (const condition of rule.conditions) edge(q(condition.sourceQuestionId), target);
  }
  return out;
}

/**
 * A loop of visibility dependence, as the node ids along it (first = last), or `null`. Iterative
 * depth-first search, so large forms do not exhaust the stack.
 */
export function findCycle(form: LogicForm): string[] | null {
  const graph = dependencies(form);
  const state = new Map<NodeId, 1 | 2>(); // 1 on the current path, 2 done
  for (const start of graph.keys()) {
    if (state.has(start)) continue;
    const path: NodeId[] = [start];
    const cursor: number[] = [0];
    state.set(start, 1);
    while (path.length > 0) {
      const node = path[path.length - 1]!;
      const next = graph.get(node) ?? [];
      const i = cursor[cursor.length - 1]!;
      if (i >= next.length) {
        state.set(node, 2);
        path.pop();
        cursor.pop();
        continue;
      }
      cursor[cursor.length - 1] = i + 1;
      const child = next[i]!;
      const seen = state.get(child);
      if (seen === 1) return [...path.slice(path.indexOf(child)), child];
      if (seen === undefined) {
        state.set(child, 1);
        path.push(child);
        cursor.push(0);
      }
    }
  }
  return null;
}

export interface Evaluation {
  visibleQuestionIds: string[];
  hiddenQuestionIds: string[];
  visibleSectionIds: string[];
  hiddenSectionIds: string[];
  missingRequiredQuestionIds: string[];
}

interface CompiledCondition {
  /** Index of the source question in `questionIds`. */
  source: number;
  kind: AnswerKind;
  operator: Operator;
  value: unknown;
}

interface CompiledRule {
  show: boolean;
  all: boolean;
  conditions: CompiledCondition[];
}

/**
 * A form prepared for many evaluations: nodes numbered (sections first, then questions), their
 * dependence order, and the rules of each node, so that an evaluation is one pass over arrays.
 */
export interface CompiledLogic {
  sectionIds: string[];
  questionIds: string[];
  /** Node numbers in dependence order (a node after everything it depends on). */
  order: Int32Array;
  /** For each question, the node number of its section, or -1. */
  sectionOf: Int32Array;
  required: Uint8Array;
  rules: Array<CompiledRule[] | null>;
}

export function compileLogic(form: LogicForm): CompiledLogic {
  const sectionIndex = new Map(form.sections.map((section, i) => [section.id, i]));
  const base = form.sections.length;
  const questionIndex = new Map(form.questions.map((question, i) => [question.id, i]));
  const total = base + form.questions.length;
  const kinds = form.questions.map((question) => answerKind(question.type, question.options));

  // Edges of dependence as adjacency lists over node numbers.
  const targets: number[][] = Array.from({ length: total }, () => []);
  const indegree = new Int32Array(total);
  const sectionOf = new Int32Array(form.questions.length).fill(-1);
  form.questions.forEach((question, i) => {
    if (question.sectionId === null) return;
    const section = sectionIndex.get(question.sectionId);
    if (section === undefined) throw new Error(`question ${question.id} names an unknown section`);
    sectionOf[i] = section;
    targets[section]!.push(base + i);
    indegree[base + i]!++;
  });
  // Filled, not `new Array(total)`: a large array of holes may be kept as a dictionary by V8.
  const rules: Array<CompiledRule[] | null> = Array.from({ length: total }, () => null);
  for (const rule of form.rules) {
    const target = rule.targetQuestionId !== null ? base + questionIndex.get(rule.targetQuestionId)! : sectionIndex.get(rule.targetSectionId!)!;
    if (target === undefined || Number.isNaN(target)) throw new Error(`rule ${rule.id} names an unknown target`);
    const conditions = rule.conditions.map((condition) => {
      const source = questionIndex.get(condition.sourceQuestionId);
      if (source === undefined) throw new Error(`rule ${rule.id} names an unknown source`);
      targets[base + source]!.push(target);
      indegree[target]!++;
      // Lists become sets once, so a condition costs the same however long its list is.
      const value = condition.operator === 'is_any_of' && Array.isArray(condition.value) ? new Set(condition.value) : condition.value;
      return { source, kind: kinds[source]!, operator: condition.operator, value };
    });
    (rules[target] ??= []).push({ show: rule.action === 'show', all: rule.match === 'all', conditions });
  }
  // Kahn's algorithm; stored forms are acyclic (rules that would close a loop are refused).
  const order = new Int32Array(total);
  let head = 0;
  let tail = 0;
  for (let n = 0; n < total; n++) if (indegree[n] === 0) order[tail++] = n;
  while (head < tail) {
    const node = order[head++]!;
    for (const t of targets[node]!) if (--indegree[t]! === 0) order[tail++] = t;
  }
  if (tail !== total) throw new Error('the form has a loop of rules; it cannot be evaluated');
  return {
    sectionIds: form.sections.map((section) => section.id),
    questionIds: form.questions.map((question) => question.id),
    order,
    sectionOf,
    required: Uint8Array.from(form.questions, (question, i) => (question.isRequired && kinds[i] !== 'none' ? 1 : 0)),
    rules,
  };
}

/**
 * The decision itself: which nodes (sections, then questions, by number) are visible for these
 * answers (already checked against the questions). Allocates one byte per node and nothing else.
 */
export function decideVisibility(logic: CompiledLogic, answers: Readonly<Record<string, unknown>>): Uint8Array {
  const base = logic.sectionIds.length;
  const ids = logic.questionIds;
  const visible = new Uint8Array(base + ids.length);
  const holds = (rule: CompiledRule): boolean => {
    for (const c of rule.conditions) {
      const answer = visible[base + c.source] ? answers[ids[c.source]!] : undefined;
      const ok = conditionHolds(c.kind, c.operator, c.value, answer);
      if (rule.all ? !ok : ok) return !rule.all;
    }
    return rule.all;
  };
  for (const node of logic.order) {
    const rules = logic.rules[node];
    let shown = true;
    if (rules) {
      let hasShow = false;
      let shows = false;
      for (const rule of rules) {
        if (rule.show) {
          hasShow = true;
          if (!shows && holds(rule)) shows = true;
        } else if (holds(rule)) {
          shown = false;
          break;
        }
      }
      if (hasShow && !shows) shown = false;
    }
    if (shown && node >= base) {
      const section = logic.sectionOf[node - base]!;
      if (section >= 0 && !visible[section]) shown = false;
    }
    visible[node] = shown ? 1 : 0;
  }
  return visible;
}

/** Which questions and sections show for these answers (already checked against the questions). */
export function evaluateLogic(logic: CompiledLogic, answers: Readonly<Record<string, unknown>>): Evaluation {
  const visible = decideVisibility(logic, answers);
  const base = logic.sectionIds.length;
  const result: Evaluation = { visibleQuestionIds: [], hiddenQuestionIds: [], visibleSectionIds: [], hiddenSectionIds: [], missingRequiredQuestionIds: [] };
  logic.sectionIds.forEach((id, i) => (visible[i] ? result.visibleSectionIds : result.hiddenSectionIds).push(id));
  logic.questionIds.forEach((id, i) => {
    if (!visible[base + i]) {
      result.hiddenQuestionIds.push(id);
      return;
    }
    result.visibleQuestionIds.push(id);
    if (logic.required[i] && isEmpty(answers[id])) result.missingRequiredQuestionIds.push(id);
  });
  return result;
}
