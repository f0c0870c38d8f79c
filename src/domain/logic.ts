import { isCalendarDate } from './fields.js';
import { count, LIMITS, longerThan } from './limits.js';
import { computeFormula, parseFormula, referenceIndex, resolveReference, type Formula, type ReferenceIndex } from './question-options.js';
import { answerKind, choicesOf, QUESTION_TYPE_SPECS, scalarProblem } from './question-types.js';
import type { AnswerKind, QuestionType } from './questions.js';

/**
 * The show/hide logic of forms: one pure engine for write-time checks (which operator fits which
 * question, cycles) and for evaluation. API.md, Rules:
 * - a target with `show` rules is hidden unless one of them holds; a `hide` rule that holds hides it;
 * - a hidden section hides its questions;
 * - the answer of a hidden question counts as empty in every condition (so hiding cascades);
 * - a calculation takes no answer: its value is worked out from the (effective) answers its
 *   formula refers to, so it depends on their visibility as a rule's target depends on its sources.
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
  /** Its text, by which a calculation's formula may refer to it (`{{Quantity}}`). */
  questionText?: string;
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
    const choices = choicesOf(question.type, question.options);
    for (const item of value) {
      const problem = scalarProblem(kind === 'choices' ? 'choice' : kind, item, choices) ?? textProblem(item);
      if (problem) return `every item ${problem}`;
    }
    return null;
  }
  return scalarProblem(kind === 'choices' ? 'choice' : kind, value, choicesOf(question.type, question.options)) ?? textProblem(value);
}

/** A condition's text is at most `LIMITS.conditionTextLength` characters. */
function textProblem(value: unknown): string | null {
  return typeof value === 'string' && longerThan(value, LIMITS.conditionTextLength)
    ? `must be at most ${count(LIMITS.conditionTextLength)} characters long (the longest text of a condition)`
    : null;
}

/** Whether a condition is a substring search through a text answer (it reads the whole answer). */
export function isTextSearchOn(question: Pick<LogicQuestion, 'type' | 'options'>, operator: Operator): boolean {
  return isTextSearch(operator) && answerKind(question.type, question.options) === 'text';
}

/**
 * Case folding for `contains` (API.md: "a case-insensitive substring test"): lower case, as
 * `toLowerCase` does it (so "İ" folds to "i̇" on both sides). An evaluation folds each answer once,
 * and a compiled form holds its values folded already.
 */
const fold = (text: string): string => text.toLowerCase();

/** Whether a condition holds for an (effective) answer. */
export function conditionHolds(kind: AnswerKind, operator: Operator, expected: unknown, answer: unknown): boolean {
  const folded = typeof answer === 'string' && isTextSearch(operator) ? fold(answer) : undefined;
  return conditionHoldsPrepared(kind, operator, searchedFor(kind, operator, expected), answer, isEmpty(answer), folded);
}

const isTextSearch = (operator: Operator): boolean => operator === 'contains' || operator === 'not_contains';

/**
 * What `contains` looks for, as the condition compares it: text folded once; on a list of choices
 * the choice as written (membership, API.md), not folded. Any other value as it is.
 */
const searchedFor = (kind: AnswerKind, operator: Operator, value: unknown): unknown =>
  typeof value === 'string' && isTextSearch(operator) && kind !== 'choices' ? fold(value) : value;

/**
 * `conditionHolds` with the answer's emptiness and folded text given (computed once per answer
 * and evaluation, not once per condition: a long answer must not cost its length per condition)
 * and, for `contains` on text, `expected` folded already.
 */
function conditionHoldsPrepared(kind: AnswerKind, operator: Operator, expected: unknown, answer: unknown, empty: boolean, folded: string | undefined): boolean {
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
        : folded !== undefined && typeof expected === 'string' && folded.includes(expected);
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
  // A calculation's value depends on the answers (and so the visibility) of what it refers to.
  const index = formulaIndex(form.questions);
  form.questions.forEach((question) => {
    const formula = formulaOf(question, index);
    for (const source of formula?.sources ?? []) if (source >= 0) edge(q(form.questions[source]!.id), q(question.id));
  });
  return out;
}

/**
 * A calculation's formula with its references resolved to indexes in `questions` (`null` for
 * other types). A reference that resolves to nothing is left out: stored forms have none (every
 * change that would break a formula is refused), and a write being checked is refused elsewhere.
 */
function formulaOf(question: LogicQuestion, index: FormulaIndex): (Formula & { sources: number[] }) | null {
  if (QUESTION_TYPE_SPECS[question.type].value !== 'computed' || typeof question.options.formula !== 'string') return null;
  const formula = parseFormula(question.options.formula);
  const sources = formula.refs.map((name) => {
    const found = resolveReference(name, index);
    return 'question' in found ? found.question.index : -1;
  });
  return { ...formula, sources };
}

type FormulaIndex = ReferenceIndex<{ id: string; questionText: string; index: number }>;

/** The questions by id and text, built once per form (only when it has a calculation). */
function formulaIndex(questions: readonly LogicQuestion[]): FormulaIndex {
  const any = questions.some((q) => QUESTION_TYPE_SPECS[q.type].value === 'computed');
  return referenceIndex(any ? questions.map((item, index) => ({ id: item.id, questionText: item.questionText ?? '', index })) : []);
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

/**
 * A form prepared for many evaluations, as flat arrays: nodes numbered (sections first, then
 * questions) in dependence order, and for each node the range of its rules, for each rule the range
 * of its conditions. An evaluation is one pass over these arrays, in memory order, with no object
 * per rule or condition to chase.
 */
export interface CompiledLogic {
  sectionIds: string[];
  questionIds: string[];
  /** Node numbers in dependence order (a node after everything it depends on). */
  order: Int32Array;
  /** For each question, the node number of its section, or -1. */
  sectionOf: Int32Array;
  required: Uint8Array;
  /** Rules of node n: `ruleRange[2n] .. ruleRange[2n + 1]` (rules are laid out in visiting order). */
  ruleRange: Int32Array;
  /** Per rule: bit 0 show (else hide), bit 1 match all (else any). */
  ruleFlags: Uint8Array;
  /** Conditions of rule r: `conditionStart[r] .. conditionStart[r + 1]`. */
  conditionStart: Int32Array;
  /** Per condition: the source question's index in `questionIds`. */
  conditionSource: Int32Array;
  conditionKind: AnswerKind[];
  conditionOperator: Operator[];
  /** Per condition: the value to compare with (lists of `is_any_of` as sets). */
  conditionValue: unknown[];
  /**
   * Per question: its formula when it is a calculation whose value is read (by a condition, or
   * because it is required); its value is computed, never answered.
   */
  formulas: Array<(Formula & { sources: number[]; decimalPlaces: number }) | null>;
  /** Whether any question is a calculation. */
  computes: boolean;
}

const SHOW = 1;
const ALL = 2;

export function compileLogic(form: LogicForm): CompiledLogic {
  const sectionIndex = new Map(form.sections.map((section, i) => [section.id, i]));
  const base = form.sections.length;
  const questionIndex = new Map(form.questions.map((question, i) => [question.id, i]));
  const total = base + form.questions.length;
  const kinds = form.questions.map((question) => answerKind(question.type, question.options));

  // What each node depends on: its section, and the sources of the rules on it.
  const dependsOn: number[][] = Array.from({ length: total }, () => []);
  const sectionOf = new Int32Array(form.questions.length).fill(-1);
  form.questions.forEach((question, i) => {
    if (question.sectionId === null) return;
    const section = sectionIndex.get(question.sectionId);
    if (section === undefined) throw new Error(`question ${question.id} names an unknown section`);
    sectionOf[i] = section;
    dependsOn[base + i]!.push(section);
  });
  // A calculation is decided after what its formula refers to (see `decideVisibility`). Only the
  // values something reads are worked out: those of conditions' sources and required questions.
  const index = formulaIndex(form.questions);
  const read = new Set(form.rules.flatMap((rule) => rule.conditions.map((c) => c.sourceQuestionId)));
  const formulas = form.questions.map((question) => {
    if (!question.isRequired && !read.has(question.id)) return null;
    const formula = formulaOf(question, index);
    if (!formula) return null;
    if (formula.sources.includes(-1)) throw new Error(`calculation ${question.id} refers to a question that is not there`);
    return { ...formula, decimalPlaces: typeof question.options.decimal_places === 'number' ? question.options.decimal_places : 2 };
  });
  formulas.forEach((formula, i) => {
    for (const source of formula?.sources ?? []) dependsOn[base + i]!.push(base + source);
  });
  const rulesOf: LogicRule[][] = Array.from({ length: total }, () => []);
  for (const rule of form.rules) {
    const target = rule.targetQuestionId !== null ? questionIndex.get(rule.targetQuestionId) : sectionIndex.get(rule.targetSectionId ?? '');
    if (target === undefined) throw new Error(`rule ${rule.id} names an unknown target`);
    const node = rule.targetQuestionId !== null ? base + target : target;
    for (const condition of rule.conditions) {
      const source = questionIndex.get(condition.sourceQuestionId);
      if (source === undefined) throw new Error(`rule ${rule.id} names an unknown source`);
      dependsOn[node]!.push(base + source);
    }
    rulesOf[node]!.push(rule);
  }

  // Dependence order by depth-first search from each node in number order, emitting a node after
  // everything it depends on. Nodes that sit together in the form stay together in the order, so
  // an evaluation walks memory nearly in sequence however large the form (a breadth-first order
  // interleaves distant parts of a large form). Iterative, so large forms keep the stack small.
  const order = new Int32Array(total);
  const state = new Uint8Array(total); // 0 new, 1 on the current path, 2 emitted
  const stack = new Int32Array(total);
  const cursor = new Int32Array(total);
  let emitted = 0;
  for (let start = 0; start < total; start++) {
    if (state[start]) continue;
    let depth = 0;
    stack[0] = start;
    cursor[0] = 0;
    state[start] = 1;
    while (depth >= 0) {
      const node = stack[depth]!;
      const deps = dependsOn[node]!;
      if (cursor[depth]! < deps.length) {
        const dep = deps[cursor[depth]!++]!;
        // Stored forms are acyclic (rules that would close a loop are refused).
        if (state[dep] === 1) throw new Error('the form has a loop of rules; it cannot be evaluated');
        if (state[dep] === 0) {
          state[dep] = 1;
          stack[++depth] = dep;
          cursor[depth] = 0;
        }
        continue;
      }
      state[node] = 2;
      order[emitted++] = node;
      depth--;
    }
  }

  // Rules and conditions laid out in the order the evaluation visits them.
  const ruleFlags = new Uint8Array(form.rules.length);
  const conditionStart = new Int32Array(form.rules.length + 1);
  const conditionCount = form.rules.reduce((sum, rule) => sum + rule.conditions.length, 0);
  const conditionSource = new Int32Array(conditionCount);
  const conditionKind: AnswerKind[] = [];
  const conditionOperator: Operator[] = [];
  const conditionValue: unknown[] = [];
  const ruleRangeOf = new Int32Array(total * 2);
  let r = 0;
  let c = 0;
  for (const node of order) {
    ruleRangeOf[2 * node] = r;
    for (const rule of rulesOf[node]!) {
      ruleFlags[r] = (rule.action === 'show' ? SHOW : 0) | (rule.match === 'all' ? ALL : 0);
      conditionStart[r] = c;
      for (const condition of rule.conditions) {
        const source = questionIndex.get(condition.sourceQuestionId)!;
        conditionSource[c] = source;
        conditionKind.push(kinds[source]!);
        conditionOperator.push(condition.operator);
        // Lists become sets once, so a condition costs the same however long its list is; what
        // `contains` looks for is prepared once (searchedFor).
        const value = condition.value;
        conditionValue.push(condition.operator === 'is_any_of' && Array.isArray(value) ? new Set(value) : searchedFor(kinds[source]!, condition.operator, value));
        c++;
      }
      r++;
    }
    ruleRangeOf[2 * node + 1] = r;
  }
  conditionStart[r] = c;
  return {
    sectionIds: form.sections.map((section) => section.id),
    questionIds: form.questions.map((question) => question.id),
    order,
    sectionOf,
    required: Uint8Array.from(form.questions, (question, i) => (question.isRequired && kinds[i] !== 'none' ? 1 : 0)),
    ruleRange: ruleRangeOf,
    ruleFlags,
    conditionStart,
    conditionSource,
    conditionKind,
    conditionOperator,
    conditionValue,
    formulas,
    computes: formulas.some((f) => f !== null),
  };
}

/**
 * The decision itself: which nodes (sections, then questions, by number) are visible for these
 * answers (already checked against the questions). Allocates one byte per node and nothing else.
 */
export function decideVisibility(logic: CompiledLogic, answers: Readonly<Record<string, unknown>>, computed?: unknown[]): Uint8Array {
  const base = logic.sectionIds.length;
  const { questionIds: ids, order, ruleRange, ruleFlags, conditionStart, conditionSource, conditionKind, conditionOperator, conditionValue, sectionOf, formulas } = logic;
  const visible = new Uint8Array(base + ids.length);
  // The values of calculations (by question index), worked out in dependence order, after what
  // they refer to; an answer sent for one is refused before (`checkAnswers`).
  const calculated: unknown[] | null = logic.computes ? (computed ?? []) : null;
  // Per source question, computed at its first condition: whether its answer is empty (0 not yet
  // known, 1 empty, 2 not) and its text folded for `contains`. However many conditions read an
  // answer, its length is paid once.
  const emptiness = new Uint8Array(ids.length);
  const folded: Array<string | undefined> = [];
  for (let k = 0; k < order.length; k++) {
    const node = order[k]!;
    let shown = true;
    let hasShow = false;
    let shows = false;
    for (let r = ruleRange[2 * node]!, end = ruleRange[2 * node + 1]!; r < end; r++) {
      const flags = ruleFlags[r]!;
      const show = (flags & SHOW) !== 0;
      if (show) {
        hasShow = true;
        if (shows) continue;
      }
      // Whether the rule holds: all / any of its conditions on the effective answers (a hidden
      // question's answer counts as empty).
      const all = (flags & ALL) !== 0;
      let holds = all;
      for (let c = conditionStart[r]!, cEnd = conditionStart[r + 1]!; c < cEnd; c++) {
        const source = conditionSource[c]!;
        const operator = conditionOperator[c]!;
        let ok: boolean;
        if (!visible[base + source]) {
          ok = conditionHoldsPrepared(conditionKind[c]!, operator, conditionValue[c], undefined, true, undefined);
        } else {
          const answer = calculated !== null && formulas[source] !== null ? calculated[source] : answers[ids[source]!];
          if (emptiness[source] === 0) emptiness[source] = isEmpty(answer) ? 1 : 2;
          let text: string | undefined;
          if (typeof answer === 'string' && isTextSearch(operator)) text = folded[source] ??= fold(answer);
          ok = conditionHoldsPrepared(conditionKind[c]!, operator, conditionValue[c], answer, emptiness[source] === 1, text);
        }
        if (all ? !ok : ok) {
          holds = !all;
          break;
        }
      }
      if (!holds) continue;
      if (show) shows = true;
      else {
        shown = false;
        break;
      }
    }
    if (hasShow && !shows) shown = false;
    if (shown && node >= base) {
      const section = sectionOf[node - base]!;
      if (section >= 0 && !visible[section]) shown = false;
    }
    visible[node] = shown ? 1 : 0;
    const formula = node >= base ? formulas[node - base] : null;
    if (formula) {
      // A hidden or empty reference counts as empty (see `computeFormula`).
      const refs = formula.sources.map((source) => {
        const answer = answers[ids[source]!];
        return visible[base + source] && typeof answer === 'number' ? answer : null;
      });
      calculated![node - base] = computeFormula(formula, refs, formula.decimalPlaces);
    }
  }
  return visible;
}

/** Which questions and sections show for these answers (already checked against the questions). */
export function evaluateLogic(logic: CompiledLogic, answers: Readonly<Record<string, unknown>>): Evaluation {
  const computed: unknown[] = [];
  const visible = decideVisibility(logic, answers, computed);
  const { sectionIds, questionIds, required } = logic;
  const base = sectionIds.length;
  const split = (ids: string[], offset: number): [string[], string[]] => {
    let shown = 0;
    for (let i = 0; i < ids.length; i++) shown += visible[offset + i]!;
    // Sized once and filled in place: no growing and copying on large forms.
    const yes = new Array<string>(shown);
    const no = new Array<string>(ids.length - shown);
    let y = 0;
    let n = 0;
    for (let i = 0; i < ids.length; i++) {
      if (visible[offset + i]) yes[y++] = ids[i]!;
      else no[n++] = ids[i]!;
    }
    return [yes, no];
  };
  const [visibleSectionIds, hiddenSectionIds] = split(sectionIds, 0);
  const [visibleQuestionIds, hiddenQuestionIds] = split(questionIds, base);
  const missingRequiredQuestionIds: string[] = [];
  for (let i = 0; i < questionIds.length; i++) {
    const value = logic.formulas[i] ? computed[i] : answers[questionIds[i]!];
    if (required[i] && visible[base + i] && isEmpty(value)) missingRequiredQuestionIds.push(questionIds[i]!);
  }
  return { visibleQuestionIds, hiddenQuestionIds, visibleSectionIds, hiddenSectionIds, missingRequiredQuestionIds };
}
