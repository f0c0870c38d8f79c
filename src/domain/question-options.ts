import { invalid } from './errors.js';
import { isCalendarDate } from './fields.js';
import { LIMITS, longerThan } from './limits.js';
import type { QuestionType } from './questions.js';

/**
 * Per-type `options` of questions (API.md, Questions): keys as written here (snake_case; the
 * camelCase spelling of each is accepted too and stored as written here), defaults filled in,
 * unknown keys refused, every minimum at most its maximum.
 */
type Rule =
  | { kind: 'int'; min?: number; max?: number; required?: boolean; default?: number }
  | { kind: 'number'; positive?: boolean; required?: boolean }
  | { kind: 'text'; maxLength: number; required?: boolean }
  | { kind: 'bool'; default?: boolean }
  | { kind: 'enum'; values: readonly (string | number)[]; default?: string | number }
  | { kind: 'list'; minItems: number; maxItems: number; required?: boolean; distinct?: boolean }
  | { kind: 'date' }
  | { kind: 'currency'; required?: boolean; default?: string }
  | { kind: 'pictures' }
  | { kind: 'subset'; values: readonly string[]; default: readonly string[] }
  | { kind: 'formula' };

const TEXT: Record<string, Rule> = {
  // No text answer is longer than the contract allows (LIMITS.answerTextLength).
  min_length: { kind: 'int', min: 0, max: LIMITS.answerTextLength },
  max_length: { kind: 'int', min: 1, max: LIMITS.answerTextLength },
  pattern: { kind: 'text', maxLength: 200 },
  validation_message: { kind: 'text', maxLength: 500 },
  placeholder: { kind: 'text', maxLength: 500 },
};
const CHOICES: Rule = { kind: 'list', minItems: 1, maxItems: 500, required: true, distinct: true };
const ADDRESS_FIELDS = ['line1', 'line2', 'city', 'region', 'postal_code', 'country'] as const;

export const OPTION_RULES: Record<QuestionType, Record<string, Rule>> = {
  short_text: TEXT,
  long_text: TEXT,
  email: TEXT,
  phone: TEXT,
  url: TEXT,
  mcq: { choices: CHOICES, allow_other: { kind: 'bool', default: false } },
  dropdown: { choices: CHOICES, allow_other: { kind: 'bool', default: false } },
  multi_select: { choices: CHOICES, min_selections: { kind: 'int', min: 0 }, max_selections: { kind: 'int', min: 1 } },
  ranking: { choices: { kind: 'list', minItems: 2, maxItems: 50, required: true, distinct: true } },
  picture_choice: { picture_choices: { kind: 'pictures' }, allow_multiple: { kind: 'bool', default: false } },
  yes_no: { yes_label: { kind: 'text', maxLength: 100 }, no_label: { kind: 'text', maxLength: 100 } },
  checkbox: { checkbox_label: { kind: 'text', maxLength: 500 } },
  matrix: {
    rows: { kind: 'list', minItems: 1, maxItems: 100, required: true, distinct: true },
    columns: { kind: 'list', minItems: 1, maxItems: 20, required: true, distinct: true },
    allow_multiple: { kind: 'bool', default: false },
  },
  rating: { max: { kind: 'int', min: 3, max: 10, default: 5 }, icon: { kind: 'enum', values: ['star', 'heart', 'number'], default: 'star' } },
  opinion_scale: {
    min: { kind: 'enum', values: [0, 1], default: 0 },
    max: { kind: 'int', min: 2, max: 10, default: 10 },
    min_label: { kind: 'text', maxLength: 100 },
    max_label: { kind: 'text', maxLength: 100 },
  },
  slider: { min_value: { kind: 'number' }, max_value: { kind: 'number' }, step: { kind: 'number', positive: true } },
  number: { min_value: { kind: 'number' }, max_value: { kind: 'number' }, step: { kind: 'number', positive: true } },
  currency: { min_value: { kind: 'number' }, max_value: { kind: 'number' }, currency_code: { kind: 'currency', default: 'USD' } },
  calculation: { formula: { kind: 'formula' } },
  date: { min_date: { kind: 'date' }, max_date: { kind: 'date' } },
  date_range: { min_date: { kind: 'date' }, max_date: { kind: 'date' } },
  time: { time_format: { kind: 'enum', values: ['12h', '24h'], default: '24h' } },
  address: { fields: { kind: 'subset', values: ADDRESS_FIELDS, default: ADDRESS_FIELDS } },
  file_upload: {
    allowed_types: { kind: 'list', minItems: 1, maxItems: 50, distinct: true },
    max_size_mb: { kind: 'int', min: 1, max: 50, default: 10 },
    max_files: { kind: 'int', min: 1, max: 20, default: 1 },
  },
  digital_signature: { signature_mode: { kind: 'enum', values: ['draw', 'type', 'upload', 'any'], default: 'any' } },
  initials: { signature_mode: { kind: 'enum', values: ['draw', 'type', 'upload', 'any'], default: 'any' } },
  payment: { amount: { kind: 'number', positive: true, required: true }, currency_code: { kind: 'currency', required: true } },
  heading: {},
  divider: {},
};

/** Number-like question types a calculation's formula may refer to. */
export const FORMULA_SOURCE_TYPES: ReadonlySet<QuestionType> = new Set(['number', 'currency', 'slider', 'rating', 'opinion_scale']);

const snake = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const CURRENCIES = new Set((Intl as unknown as { supportedValuesOf(k: string): string[] }).supportedValuesOf('currency'));
const REFERENCE = /\{\{([0-9a-f-]{36})\}\}/g;

export interface OptionContext {
  /** Type of each question of the form, by id (for calculation formulas). */
  questionTypes: ReadonlyMap<string, QuestionType>;
}

/** Checks and completes `options` for a question of `type`; answers them as stored. */
export function normalizeOptions(type: QuestionType, raw: unknown, context: OptionContext, path = 'options'): Record<string, unknown> {
  if (raw === undefined || raw === null) raw = {};
  if (typeof raw !== 'object' || Array.isArray(raw)) throw invalid(path, 'must be an object');
  const rules = OPTION_RULES[type];
  const given: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
    const name = snake(key);
    if (!Object.hasOwn(rules, name)) {
      const allowed = Object.keys(rules);
      const shown = key.length > 100 ? `${key.slice(0, 100)}…` : key;
      throw invalid(`${path}.${shown}`, allowed.length ? `unknown option for type ${type} (allowed: ${allowed.join(', ')})` : `a ${type} question takes no options`);
    }
    if (Object.hasOwn(given, name)) throw invalid(`${path}.${name}`, 'given twice (in two spellings)');
    given[name] = value;
  }
  const out: Record<string, unknown> = {};
  for (const [name, rule] of Object.entries(rules)) {
    const at = `${path}.${name}`;
    const value = given[name];
    if (value === undefined || value === null) {
      if ('required' in rule && rule.required) throw invalid(at, `is required for type ${type}`);
      if (rule.kind === 'formula') throw invalid(at, 'is required for type calculation');
      if (rule.kind === 'pictures') throw invalid(at, 'is required for type picture_choice');
      if ('default' in rule && rule.default !== undefined) out[name] = Array.isArray(rule.default) ? [...rule.default] : rule.default;
      continue;
    }
    out[name] = checkValue(rule, value, at, context);
  }
  crossChecks(type, out, path);
  return out;
}

function checkValue(rule: Rule, value: unknown, at: string, context: OptionContext): unknown {
  switch (rule.kind) {
    case 'int':
      if (typeof value !== 'number' || !Number.isInteger(value)) throw invalid(at, 'must be a whole number');
      if (rule.min !== undefined && value < rule.min) throw invalid(at, `must be ≥ ${rule.min}`);
      if (rule.max !== undefined && value > rule.max) throw invalid(at, `must be ≤ ${rule.max}`);
      return value;
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value)) throw invalid(at, 'must be a number');
      if (rule.positive && value <= 0) throw invalid(at, 'must be > 0');
      return value;
    case 'text':
      if (typeof value !== 'string') throw invalid(at, 'must be a string');
      if (longerThan(value, rule.maxLength)) throw invalid(at, `must be at most ${rule.maxLength} characters long`);
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
      checkFormula(value, at, context);
      return value;
  }
}

function crossChecks(type: QuestionType, o: Record<string, unknown>, path: string): void {
  const pair = (min: string, max: string) => {
    if (o[min] !== undefined && o[max] !== undefined && (o[min] as number | string) > (o[max] as number | string)) {
      throw invalid(`${path}.${min}`, `must not exceed ${max}`);
    }
  };
  pair('min_length', 'max_length');
  pair('min_selections', 'max_selections');
  pair('min_value', 'max_value');
  pair('min_date', 'max_date');
  pair('min', 'max');
  if (type === 'multi_select' && typeof o.max_selections === 'number' && o.max_selections > (o.choices as string[]).length) {
    throw invalid(`${path}.max_selections`, 'must not exceed the number of choices');
  }
  if (type === 'multi_select' && typeof o.min_selections === 'number' && o.min_selections > (o.choices as string[]).length) {
    throw invalid(`${path}.min_selections`, 'must not exceed the number of choices');
  }
  if (typeof o.pattern === 'string') {
    try {
      new RegExp(o.pattern, 'u');
    } catch {
      throw invalid(`${path}.pattern`, 'must be a valid regular expression');
    }
  }
}

/**
 * A formula is numbers, `{{<question id>}}` references, `+ - * /`, unary minus and parentheses.
 * References must name number-like questions of the form (not calculations, so formulas never
 * depend on each other).
 */
function checkFormula(formula: string, at: string, context: OptionContext): void {
  for (const match of formula.matchAll(REFERENCE)) {
    const type = context.questionTypes.get(match[1]!);
    if (!type) throw invalid(at, `refers to ${match[1]}, which is not a question of this form`);
    if (!FORMULA_SOURCE_TYPES.has(type)) throw invalid(at, `refers to a ${type} question; only ${[...FORMULA_SOURCE_TYPES].join(', ')} questions can be used`);
  }
  const tokens = formula.replace(REFERENCE, ' R ').match(/\d+(?:\.\d+)?|R|[-+*/()]|\S/g) ?? [];
  let i = 0;
  const fail = (): never => {
    throw invalid(at, 'is not a valid formula (numbers, {{question id}}, + - * / and parentheses)');
  };
  const primary = (): void => {
    const token = tokens[i++];
    if (token === '-') return primary();
    if (token === '(') {
      sum();
      if (tokens[i++] !== ')') fail();
      return;
    }
    if (token === 'R' || (token !== undefined && /^\d/.test(token))) return;
    fail();
  };
  const product = (): void => {
    primary();
    while (tokens[i] === '*' || tokens[i] === '/') {
      i++;
      primary();
    }
  };
  const sum = (): void => {
    product();
    while (tokens[i] === '+' || tokens[i] === '-') {
      i++;
      product();
    }
  };
  if (tokens.length > 500) fail();
  sum();
  if (i !== tokens.length) fail();
}
