import { invalid } from './errors.js';
import { isCalendarDate } from './fields.js';
import { longerThan } from './limits.js';

/**
 * The building blocks of question options (API.md, Questions): what one option key may hold
 * (`OptionRule`), how a value is checked against it (`checkOptionValue`), and calculation formulas.
 * Which keys each question type takes is said once, in the type's descriptor
 * (`question-types.ts`); nothing here knows a question type.
 */
export type OptionRule =
  | { kind: 'int'; min?: number; max?: number; required?: boolean; default?: number }
  | { kind: 'number'; positive?: boolean; min?: number; required?: boolean; default?: number }
  | { kind: 'text'; maxLength: number; required?: boolean; pattern?: { test: RegExp; says: string } }
  | { kind: 'bool'; default?: boolean }
  | { kind: 'enum'; values: readonly (string | number)[]; default?: string | number }
  | { kind: 'list'; minItems: number; maxItems: number; required?: boolean; distinct?: boolean; item?: { test: RegExp; says: string } }
  | { kind: 'date' }
  | { kind: 'currency'; required?: boolean; default?: string }
  | { kind: 'pictures'; required: true }
  | { kind: 'subset'; values: readonly string[]; default: readonly string[] }
  | { kind: 'formula'; required: true }
  | { kind: 'scores' };

const CURRENCIES = new Set((Intl as unknown as { supportedValuesOf(k: string): string[] }).supportedValuesOf('currency'));

/** Checks one option value against its rule; answers it as stored. */
export function checkOptionValue(rule: OptionRule, value: unknown, at: string): unknown {
  switch (rule.kind) {
    case 'int':
      if (typeof value !== 'number' || !Number.isInteger(value)) throw invalid(at, 'must be a whole number');
      if (rule.min !== undefined && value < rule.min) throw invalid(at, `must be ≥ ${rule.min}`);
      if (rule.max !== undefined && value > rule.max) throw invalid(at, `must be ≤ ${rule.max}`);
      return value;
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value)) throw invalid(at, 'must be a number');
      if (rule.positive && value <= 0) throw invalid(at, 'must be > 0');
      if (rule.min !== undefined && value < rule.min) throw invalid(at, `must be ≥ ${rule.min}`);
      return value;
    case 'text':
      if (typeof value !== 'string') throw invalid(at, 'must be a string');
      if (longerThan(value, rule.maxLength)) throw invalid(at, `must be at most ${rule.maxLength} characters long`);
      if (rule.pattern && !rule.pattern.test.test(value)) throw invalid(at, `must be ${rule.pattern.says}`);
      return value;
    case 'bool':
      if (typeof value !== 'boolean') throw invalid(at, 'must be true or false');
      return value;
    case 'enum':
      if (!rule.values.includes(value as string | number)) throw invalid(at, `must be one of ${rule.values.map((v) => JSON.stringify(v)).join(', ')}`);
      return value;
    case 'list': {
      if (!Array.isArray(value)) throw invalid(at, 'must be an array of strings');
      if (value.length < rule.minItems) throw invalid(at, `must have at least ${rule.minItems} item${rule.minItems === 1 ? '' : 's'}`);
      if (value.length > rule.maxItems) throw invalid(at, `must have at most ${rule.maxItems} items`);
      value.forEach((item, i) => {
        if (typeof item !== 'string' || item.trim().length === 0) throw invalid(`${at}[${i}]`, 'must be a non-empty string');
        if (longerThan(item, 500)) throw invalid(`${at}[${i}]`, 'must be at most 500 characters long');
        if (rule.item && !rule.item.test.test(item)) throw invalid(`${at}[${i}]`, `must be ${rule.item.says}`);
      });
      if (rule.distinct && new Set(value).size !== value.length) throw invalid(at, 'must not repeat an item');
      return value;
    }
    case 'date':
      if (typeof value !== 'string' || !isCalendarDate(value)) throw invalid(at, 'must be a date YYYY-MM-DD');
      return value;
    case 'currency':
      if (typeof value !== 'string' || !/^[A-Z]{3}$/.test(value) || !CURRENCIES.has(value)) throw invalid(at, 'must be an ISO 4217 currency code such as USD or EUR');
      return value;
    case 'pictures': {
      if (!Array.isArray(value) || value.length === 0 || value.length > 100) throw invalid(at, 'must be a list of 1 to 100 pictures');
      const labels = new Set<string>();
      return value.map((item, i) => {
        if (item === null || typeof item !== 'object' || Array.isArray(item)) throw invalid(`${at}[${i}]`, 'must be an object { label, image_url }');
        const { label, image_url, imageUrl, ...rest } = item as Record<string, unknown>;
        if (image_url !== undefined && imageUrl !== undefined) throw invalid(`${at}[${i}].image_url`, 'given twice, as "image_url" and "imageUrl"; send one spelling');
        const unknownKey = Object.keys(rest)[0];
        if (unknownKey) throw invalid(`${at}[${i}].${unknownKey}`, 'unknown key (allowed: label, image_url)');
        if (typeof label !== 'string' || label.trim().length === 0) throw invalid(`${at}[${i}].label`, 'is required: a non-empty string');
        if (longerThan(label, 500)) throw invalid(`${at}[${i}].label`, 'must be at most 500 characters long');
        if (labels.has(label)) throw invalid(`${at}[${i}].label`, 'must not repeat a label');
        labels.add(label);
        const url = image_url ?? imageUrl;
        if (url !== undefined && url !== null && (typeof url !== 'string' || !/^https?:\/\/\S+$/.test(url) || url.length > 2000)) {
          throw invalid(`${at}[${i}].image_url`, 'must be an http(s) URL');
        }
        return url === undefined || url === null ? { label } : { label, image_url: url };
      });
    }
    case 'subset': {
      if (!Array.isArray(value) || value.length === 0) throw invalid(at, `must be a non-empty list of ${rule.values.join(', ')}`);
      value.forEach((item, i) => {
        if (!rule.values.includes(item as string)) throw invalid(`${at}[${i}]`, `must be one of ${rule.values.join(', ')}`);
      });
      if (new Set(value).size !== value.length) throw invalid(at, 'must not repeat an item');
      return value;
    }
    case 'formula':
      if (typeof value !== 'string' || value.trim().length === 0 || value.length > 2000) throw invalid(at, 'must be an arithmetic expression of at most 2000 characters');
      parseFormula(value, at);
      return value;
    case 'scores': {
      if (value === null || typeof value !== 'object' || Array.isArray(value)) throw invalid(at, 'must be an object from choice label to points');
      const entries = Object.entries(value);
      if (entries.length === 0) throw invalid(at, 'must score at least one choice');
      for (const [label, points] of entries) {
        if (typeof points !== 'number' || !Number.isFinite(points) || points < 0) throw invalid(`${at}.${label.length > 100 ? `${label.slice(0, 100)}…` : label}`, 'must be a number of points ≥ 0');
      }
      return value;
    }
  }
}

// ---- calculation formulas ----------------------------------------------------------------------

/**
 * A formula is numbers, references `{{<question id>}}` or `{{<question text>}}`, `+ - * /`, unary
 * minus and parentheses. References are resolved against the form's questions by `resolveReference`.
 */
const REFERENCE = /\{\{([^{}]*)\}\}/g;

/** A formula's program in postfix order: numbers, references (by their index in `refs`), operators. */
export interface Formula {
  /** The text inside each `{{…}}`, trimmed, in order of first appearance (each once). */
  refs: string[];
  program: Array<number | { ref: number } | '+' | '-' | '*' | '/' | 'neg'>;
}

const FORMULA_HINT = 'is not a valid formula (numbers, {{question id}} or {{question text}}, + - * / and parentheses)';

/** Parses a formula (400 at `at` when it is not one). */
export function parseFormula(formula: string, at = 'options.formula'): Formula {
  const refs: string[] = [];
  const tokens: Array<string | { ref: number }> = [];
  let last = 0;
  const lex = (text: string) => {
    for (const token of text.match(/\d+(?:\.\d+)?|[-+*/()]|\S/g) ?? []) tokens.push(token);
  };
  for (const match of formula.matchAll(REFERENCE)) {
    lex(formula.slice(last, match.index));
    const name = match[1]!.trim();
    if (name.length === 0) throw invalid(at, 'has an empty reference {{}}; write {{question id}} or {{question text}}');
    let index = refs.indexOf(name);
    if (index < 0) index = refs.push(name) - 1;
    tokens.push({ ref: index });
    last = match.index + match[0].length;
  }
  lex(formula.slice(last));
  if (tokens.length > 500) throw invalid(at, 'is too long: at most 500 numbers, references and operators');
  const program: Formula['program'] = [];
  let i = 0;
  const fail = (): never => {
    throw invalid(at, FORMULA_HINT);
  };
  const primary = (): void => {
    const token = tokens[i++];
    if (token === '-') {
      primary();
      program.push('neg');
      return;
    }
    if (token === '(') {
      sum();
      if (tokens[i++] !== ')') fail();
      return;
    }
    if (typeof token === 'object') return void program.push(token);
    if (token !== undefined && /^\d/.test(token)) return void program.push(Number(token));
    fail();
  };
  const product = (): void => {
    primary();
    while (tokens[i] === '*' || tokens[i] === '/') {
      const op = tokens[i++] as '*' | '/';
      primary();
      program.push(op);
    }
  };
  const sum = (): void => {
    product();
    while (tokens[i] === '+' || tokens[i] === '-') {
      const op = tokens[i++] as '+' | '-';
      product();
      program.push(op);
    }
  };
  sum();
  if (i !== tokens.length) fail();
  return { refs, program };
}

/** What a reference may resolve to: a question of the form. */
export interface ReferenceTarget {
  id: string;
  questionText: string;
}

/** The questions of a form by id and by text, built once for resolving many references. */
export interface ReferenceIndex<Q extends ReferenceTarget> {
  byId: ReadonlyMap<string, Q>;
  byText: ReadonlyMap<string, Q[]>;
}

export function referenceIndex<Q extends ReferenceTarget>(questions: readonly Q[]): ReferenceIndex<Q> {
  const byId = new Map<string, Q>();
  const byText = new Map<string, Q[]>();
  for (const q of questions) {
    byId.set(q.id, q);
    const text = q.questionText.trim();
    const list = byText.get(text);
    if (list) list.push(q);
    else byText.set(text, [q]);
  }
  return { byId, byText };
}

/**
 * The question a reference names: the question with that id, else the one question with that text
 * (exactly, after trimming). `{ problem }` when it names none or several.
 */
export function resolveReference<Q extends ReferenceTarget>(name: string, index: ReferenceIndex<Q>): { question: Q } | { problem: string } {
  const byId = index.byId.get(name);
  if (byId) return { question: byId };
  const byText = index.byText.get(name) ?? [];
  if (byText.length === 1) return { question: byText[0]! };
  if (byText.length === 0) return { problem: 'is not a question of this form (no question has this id or this text)' };
  return { problem: `names ${byText.length} questions by their text; refer to one by its id` };
}

/**
 * A formula's value for the values of its references (`null` for an empty one): empty references
 * count as 0; the result is empty when every reference is empty, or when it is not a finite number
 * (a division by zero). Rounded to `decimalPlaces`.
 */
export function computeFormula(formula: Formula, values: ReadonlyArray<number | null>, decimalPlaces: number): number | null {
  if (formula.refs.length > 0 && values.every((v) => v === null)) return null;
  const stack: number[] = [];
  for (const step of formula.program) {
    if (typeof step === 'number') stack.push(step);
    else if (typeof step === 'object') stack.push(values[step.ref] ?? 0);
    else if (step === 'neg') stack.push(-stack.pop()!);
    else {
      const b = stack.pop()!;
      const a = stack.pop()!;
      stack.push(step === '+' ? a + b : step === '-' ? a - b : step === '*' ? a * b : a / b);
    }
  }
  const result = stack[0]!;
  if (!Number.isFinite(result)) return null;
  const f = 10 ** decimalPlaces;
  const rounded = Math.round((Math.abs(result) + Number.EPSILON) * f) / f;
  return result < 0 ? -rounded : rounded === 0 ? 0 : rounded;
}
