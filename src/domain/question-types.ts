import { invalid } from './errors.js';
import { isCalendarDate } from './fields.js';
import { LIMITS } from './limits.js';
import { checkOptionValue, parseFormula, referenceIndex, resolveReference, type OptionRule, type ReferenceIndex, type ReferenceTarget } from './question-options.js';
import type { AnswerKind, QuestionType } from './questions.js';

/**
 * Everything the service knows about each question type, in one descriptor per type
 * (`QUESTION_TYPE_SPECS`, a `Record<QuestionType, …>`: adding a type to `QUESTION_TYPES` is a
 * compile error until its descriptor is written). API.md, Questions.
 */
export interface QuestionTypeSpec {
  /** What kind of value its answer is (for rules and answer checks); some depend on its options. */
  answerKind(options: Options): AnswerKind;
  /**
   * `answer`: the client answers it; `computed`: the service works its value out (a calculation);
   * `none`: it holds no value (headings, dividers: they cannot be required either).
   */
  value: 'answer' | 'computed' | 'none';
  /** Its option keys (snake_case, as stored and returned) and what each may hold. */
  options: Readonly<Record<string, OptionRule>>;
  /** Which quiz options it takes on top: against its `choices`, its numeric range, or a text. */
  quiz: 'choices' | 'value' | 'text' | null;
  /** Checks among its options beyond each key's own rule (every `min_*` ≤ `max_*` is checked for all). */
  crossCheck(options: Options, path: string, context: OptionContext): void;
  /** The labels its answers are chosen from (`null` when it is not a choice question). */
  choices(options: Options): string[] | null;
  /** The range a numeric answer lies in, where the options say (for `correct_answer_value`). */
  range(options: Options): { min?: number; max?: number } | null;
  /** Whether a calculation's formula may refer to it. */
  formulaSource: boolean;
  /** Why a (non-empty) answer does not fit, or `null`. `choices` is `choices(options)` as a set. */
  answerProblem(value: unknown, options: Options, choices: ReadonlySet<string> | null): string | null;
}

type Options = Record<string, unknown>;

export interface OptionContext {
  /** The questions of the form as they will be after the change (for calculation formulas). */
  questions: ReadonlyArray<ReferenceTarget & { type: QuestionType }>;
}

// ---- option rules shared by several types ------------------------------------------------------

const TEXT: Record<string, OptionRule> = {
  // No text answer is longer than the contract allows (LIMITS.answerTextLength).
  min_length: { kind: 'int', min: 0, max: LIMITS.answerTextLength },
  max_length: { kind: 'int', min: 1, max: LIMITS.answerTextLength },
  pattern: { kind: 'text', maxLength: 200 },
  validation_message: { kind: 'text', maxLength: 500 },
  placeholder: { kind: 'text', maxLength: 500 },
};
const CHOICES: OptionRule = { kind: 'list', minItems: 1, maxItems: 500, required: true, distinct: true };
const LABEL: OptionRule = { kind: 'text', maxLength: 100 };
const POINTS: OptionRule = { kind: 'number', min: 0 };
const DECIMAL_PLACES: OptionRule = { kind: 'int', min: 0, max: 3, default: 2 };
const SIGNATURE_MODE: OptionRule = { kind: 'enum', values: ['draw', 'type', 'upload', 'both', 'any'], default: 'both' };
export const ADDRESS_FIELDS = ['street', 'street2', 'city', 'state', 'zip', 'country'] as const;

/** Quiz options by the kind of quiz a type takes. */
export const QUIZ_OPTIONS: Record<NonNullable<QuestionTypeSpec['quiz']>, Record<string, OptionRule>> = {
  choices: { correct_answers: { kind: 'list', minItems: 1, maxItems: 500, distinct: true }, choice_scores: { kind: 'scores' }, correct_answer_points: POINTS },
  value: { correct_answer_value: { kind: 'number' }, correct_answer_points: POINTS },
  text: { correct_answer_text: { kind: 'text', maxLength: LIMITS.answerTextLength }, correct_answer_points: POINTS },
};

// ---- answer checks shared by several types -----------------------------------------------------

const TIME = /^([01]\d|2[0-3]):[0-5]\d$/;
const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');
const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Why `value` is not one value of `kind` for a question with these choices (a rule's value, or an answer), or `null`. */
export function scalarProblem(kind: AnswerKind, value: unknown, choices: readonly string[] | ReadonlySet<string> | null = null): string | null {
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
    case 'choice':
    case 'choices': {
      const list = choices ?? [];
      const has = list instanceof Set ? list.has(value as string) : (list as readonly string[]).includes(value as string);
      return typeof value === 'string' && has ? null : `must be one of the choices (${[...list].map((c) => JSON.stringify(c)).join(', ')})`;
    }
    case 'structured':
    case 'none':
      return 'is not allowed';
  }
}

const scalarAnswer = (kind: AnswerKind) => (value: unknown) => scalarProblem(kind, value);

function oneChoice(value: unknown, o: Options, choices: ReadonlySet<string> | null): string | null {
  // "Other" lets the answer be any text.
  if (o.allow_other === true) return typeof value === 'string' ? null : 'must be a string';
  return scalarProblem('choice', value, choices);
}

function manyChoices(value: unknown, _o: Options, choices: ReadonlySet<string> | null): string | null {
  const set = choices!;
  if (!isStrings(value)) return 'must be an array of choices';
  if (value.length > set.size) return 'must not hold more items than there are choices';
  if (value.some((v) => !set.has(v))) return 'must hold only the choices';
  return new Set(value).size === value.length ? null : 'must not repeat a choice';
}

// ---- cross-checks shared by several types ------------------------------------------------------

const noCrossCheck = (): void => {};

function checkPattern(o: Options, path: string): void {
  if (typeof o.pattern !== 'string') return;
  try {
    new RegExp(o.pattern, 'u');
  } catch {
    throw invalid(`${path}.pattern`, 'must be a valid regular expression');
  }
}

/** Quiz options on a choice question name only its choices. */
function checkChoiceQuiz(o: Options, path: string, choices: readonly string[], also: readonly string[] = []): void {
  const allowed = new Set([...choices, ...also]);
  const hint = `is not one of the question's choices (${choices.map((c) => JSON.stringify(c)).join(', ')})`;
  (o.correct_answers as string[] | undefined)?.forEach((label, i) => {
    if (!allowed.has(label)) throw invalid(`${path}.correct_answers[${i}]`, `"${label}" ${hint}`);
  });
  for (const label of Object.keys((o.choice_scores as Options | undefined) ?? {})) {
    if (!allowed.has(label)) throw invalid(`${path}.choice_scores.${label.length > 100 ? `${label.slice(0, 100)}…` : label}`, `"${label}" ${hint}`);
  }
}

/** `correct_answer_value` lies in the question's range. */
function checkValueQuiz(o: Options, path: string, range: { min?: number; max?: number } | null): void {
  const value = o.correct_answer_value;
  if (typeof value !== 'number' || !range) return;
  if (range.min !== undefined && value < range.min) throw invalid(`${path}.correct_answer_value`, `must be within the question's range (≥ ${range.min})`);
  if (range.max !== undefined && value > range.max) throw invalid(`${path}.correct_answer_value`, `must be within the question's range (≤ ${range.max})`);
}

const minMax = (o: Options, min: string, max: string) => ({ min: o[min] as number | undefined, max: o[max] as number | undefined });

// ---- the descriptors ---------------------------------------------------------------------------

const base = {
  quiz: null,
  crossCheck: noCrossCheck,
  choices: () => null,
  range: () => null,
  formulaSource: false,
  value: 'answer',
} as const;

const text = (quiz: 'text' | null): QuestionTypeSpec => ({
  ...base,
  answerKind: () => 'text',
  options: TEXT,
  quiz,
  crossCheck: checkPattern,
  answerProblem: scalarAnswer('text'),
});

const singleChoice: QuestionTypeSpec = {
  ...base,
  answerKind: () => 'choice',
  options: { choices: CHOICES, allow_other: { kind: 'bool', default: false } },
  quiz: 'choices',
  choices: (o) => o.choices as string[],
  crossCheck: (o, path) => checkChoiceQuiz(o, path, o.choices as string[]),
  answerProblem: oneChoice,
};

const numeric = (options: Record<string, OptionRule>, range: QuestionTypeSpec['range']): QuestionTypeSpec => ({
  ...base,
  answerKind: () => 'number',
  options,
  quiz: 'value',
  range,
  formulaSource: true,
  crossCheck: (o, path) => checkValueQuiz(o, path, range(o)),
  answerProblem: scalarAnswer('number'),
});

const signature: QuestionTypeSpec = {
  ...base,
  answerKind: () => 'structured',
  options: { signature_mode: SIGNATURE_MODE },
  answerProblem: (value) => (typeof value === 'string' ? null : 'must be a string (the signature)'),
};

const dates = { min_date: { kind: 'date' }, max_date: { kind: 'date' } } as const satisfies Record<string, OptionRule>;

const noValue: QuestionTypeSpec = {
  ...base,
  value: 'none',
  answerKind: () => 'none',
  options: {},
  answerProblem: () => 'must be null: it collects no answer',
};

export const QUESTION_TYPE_SPECS: Record<QuestionType, QuestionTypeSpec> = {
  short_text: text('text'),
  long_text: text(null),
  email: text(null),
  phone: text(null),
  url: text(null),
  mcq: singleChoice,
  dropdown: singleChoice,
  multi_select: {
    ...base,
    answerKind: () => 'choices',
    options: { choices: CHOICES, min_selections: { kind: 'int', min: 0 }, max_selections: { kind: 'int', min: 1 } },
    quiz: 'choices',
    choices: (o) => o.choices as string[],
    crossCheck: (o, path) => {
      const n = (o.choices as string[]).length;
      if (typeof o.max_selections === 'number' && o.max_selections > n) throw invalid(`${path}.max_selections`, 'must not exceed the number of choices');
      if (typeof o.min_selections === 'number' && o.min_selections > n) throw invalid(`${path}.min_selections`, 'must not exceed the number of choices');
      checkChoiceQuiz(o, path, o.choices as string[]);
    },
    answerProblem: manyChoices,
  },
  ranking: {
    ...base,
    answerKind: () => 'structured',
    options: { choices: { kind: 'list', minItems: 2, maxItems: 50, required: true, distinct: true } },
    choices: (o) => o.choices as string[],
    answerProblem: (value, _o, choices) => {
      const set = choices!;
      // "The ordered list of its choices" (API.md): every choice once, in the order ranked.
      const ok = isStrings(value) && value.length === set.size && value.every((v) => set.has(v)) && new Set(value).size === value.length;
      return ok ? null : `must be an array of all ${set.size} choices, each once, in ranked order`;
    },
  },
  picture_choice: {
    ...base,
    answerKind: (o) => (o.allow_multiple === true ? 'choices' : 'choice'),
    options: { picture_choices: { kind: 'pictures', required: true }, allow_multiple: { kind: 'bool', default: false } },
    quiz: 'choices',
    choices: (o) => ((o.picture_choices as Array<{ label: string }> | undefined) ?? []).map((c) => c.label),
    crossCheck: (o, path) => {
      const labels = (o.picture_choices as Array<{ label: string }>).map((c) => c.label);
      checkChoiceQuiz(o, path, labels);
    },
    answerProblem: (value, o, choices) => (o.allow_multiple === true ? manyChoices(value, o, choices) : oneChoice(value, o, choices)),
  },
  yes_no: {
    ...base,
    answerKind: () => 'boolean',
    options: { yes_label: LABEL, no_label: LABEL },
    quiz: 'choices',
    // Quiz labels: Yes/No, or its custom labels when it has them (both spellings accepted).
    crossCheck: (o, path) => {
      if (o.yes_label !== undefined && o.yes_label === o.no_label) throw invalid(`${path}.no_label`, 'must differ from yes_label');
      checkChoiceQuiz(o, path, [String(o.yes_label ?? 'Yes'), String(o.no_label ?? 'No')], ['Yes', 'No']);
    },
    answerProblem: scalarAnswer('boolean'),
  },
  checkbox: { ...base, answerKind: () => 'boolean', options: { checkbox_label: { kind: 'text', maxLength: 500 } }, answerProblem: scalarAnswer('boolean') },
  matrix: {
    ...base,
    answerKind: () => 'structured',
    options: {
      rows: { kind: 'list', minItems: 1, maxItems: 100, required: true, distinct: true },
      columns: { kind: 'list', minItems: 1, maxItems: 20, required: true, distinct: true },
      allow_multiple: { kind: 'bool', default: false },
    },
    answerProblem: (value, o) => {
      if (!isObject(value)) return 'must be an object of row → column';
      const rows = o.rows as string[];
      const columns = o.columns as string[];
      if (Object.keys(value).length > rows.length) return 'has more rows than the question';
      for (const [row, cell] of Object.entries(value)) {
        if (!rows.includes(row)) return `names the row "${row}", which is not one of the rows`;
        // With allow_multiple every cell is an array of columns (API.md); without, one column.
        if (o.allow_multiple === true && !Array.isArray(cell)) return `has a value for "${row}" that is not an array of columns (the question allows several)`;
        const cells = o.allow_multiple === true ? (cell as unknown[]) : [cell];
        if (cells.length > columns.length) return `has more values for "${row}" than there are columns`;
        if (cells.some((c) => typeof c !== 'string' || !columns.includes(c))) return `has a value for "${row}" that is not one of the columns`;
        if (new Set(cells).size !== cells.length) return `names a column twice for "${row}"`;
      }
      return null;
    },
  },
  rating: numeric(
    {
      min: { kind: 'enum', values: [0, 1], default: 1 },
      max: { kind: 'int', min: 3, max: 10, default: 5 },
      min_label: LABEL,
      max_label: LABEL,
      icon: { kind: 'enum', values: ['star', 'heart', 'number'], default: 'star' },
    },
    (o) => minMax(o, 'min', 'max'),
  ),
  opinion_scale: numeric(
    { min: { kind: 'enum', values: [0, 1], default: 1 }, max: { kind: 'int', min: 2, max: 10, default: 10 }, min_label: LABEL, max_label: LABEL },
    (o) => minMax(o, 'min', 'max'),
  ),
  slider: numeric(
    {
      min_value: { kind: 'number', default: 0 },
      max_value: { kind: 'number', default: 100 },
      step: { kind: 'number', positive: true, default: 1 },
      show_value: { kind: 'bool', default: true },
    },
    (o) => minMax(o, 'min_value', 'max_value'),
  ),
  number: numeric({ min_value: { kind: 'number' }, max_value: { kind: 'number' }, step: { kind: 'number', positive: true } }, (o) => minMax(o, 'min_value', 'max_value')),
  currency: numeric(
    { min_value: { kind: 'number' }, max_value: { kind: 'number' }, currency_code: { kind: 'currency', default: 'USD' }, decimal_places: DECIMAL_PLACES },
    (o) => minMax(o, 'min_value', 'max_value'),
  ),
  calculation: {
    ...base,
    value: 'computed',
    answerKind: () => 'number',
    options: { formula: { kind: 'formula', required: true }, decimal_places: DECIMAL_PLACES },
    crossCheck: (o, path, context) => {
      const problem = formulaProblem(o.formula as string, referenceIndex(context.questions));
      if (problem) throw invalid(`${path}.formula`, problem);
    },
    answerProblem: () => 'must be null: it is calculated from the answers its formula refers to',
  },
  date: { ...base, answerKind: () => 'date', options: dates, answerProblem: scalarAnswer('date') },
  date_range: {
    ...base,
    answerKind: () => 'structured',
    options: dates,
    answerProblem: (value) => {
      if (!isObject(value)) return 'must be an object { start, end }';
      if (Object.keys(value).some((k) => k !== 'start' && k !== 'end')) return 'must have only start and end';
      const { start, end } = value;
      if (typeof start !== 'string' || !isCalendarDate(start) || typeof end !== 'string' || !isCalendarDate(end)) return 'must have start and end dates YYYY-MM-DD';
      return start <= end ? null : 'must not end before it starts';
    },
  },
  time: { ...base, answerKind: () => 'time', options: { time_format: { kind: 'enum', values: ['12h', '24h'], default: '24h' } }, answerProblem: scalarAnswer('time') },
  address: {
    ...base,
    answerKind: () => 'structured',
    options: { address_fields: { kind: 'subset', values: ADDRESS_FIELDS, default: ADDRESS_FIELDS.filter((f) => f !== 'street2') } },
    answerProblem: (value, o) => {
      if (!isObject(value)) return `must be an object with the keys of its address_fields`;
      const fields = o.address_fields as string[];
      for (const [key, line] of Object.entries(value)) {
        if (!fields.includes(key)) return `has the key "${key.length > 100 ? `${key.slice(0, 100)}…` : key}", which is not one of its address_fields (${fields.join(', ')})`;
        if (typeof line !== 'string' && line !== null) return `has "${key}" that is not a string`;
      }
      return null;
    },
  },
  file_upload: {
    ...base,
    answerKind: () => 'structured',
    options: {
      allowed_types: {
        kind: 'list', minItems: 1, maxItems: 50, distinct: true,
        item: { test: /^(\.?[A-Za-z0-9]{1,16}|[a-z]+\/[A-Za-z0-9.+*-]+)$/, says: 'a file extension such as pdf or .docx, or a MIME type such as image/png' },
      },
      max_size_mb: { kind: 'int', min: 1, max: 100, default: 10 },
      max_files: { kind: 'int', min: 1, max: 20, default: 1 },
    },
    answerProblem: (value, o) => (Array.isArray(value) && value.length <= (o.max_files as number) && isStrings(value) ? null : `must be an array of at most ${String(o.max_files)} file references`),
  },
  digital_signature: signature,
  initials: signature,
  payment: {
    ...base,
    answerKind: () => 'structured',
    options: {
      amount: { kind: 'int', min: 1, required: true },
      currency_code: { kind: 'currency', default: 'USD' },
      payment_description: { kind: 'text', maxLength: 500 },
      stripe_publishable_key: { kind: 'text', maxLength: 255, pattern: { test: /^pk_(live|test)_[A-Za-z0-9]+$/, says: 'a Stripe publishable key (pk_live_… or pk_test_…)' } },
    },
    answerProblem: (value) => (isObject(value) ? null : 'must be an object (the payment)'),
  },
  heading: noValue,
  divider: noValue,
};

// ---- what the rest of the service asks about a type --------------------------------------------

export function answerKind(type: QuestionType, options: Options = {}): AnswerKind {
  return QUESTION_TYPE_SPECS[type].answerKind(options);
}

/** The list a choice question's answers come from (empty for other types). */
export function choicesOf(type: QuestionType, options: Options): string[] {
  return QUESTION_TYPE_SPECS[type].choices(options) ?? [];
}

/** Number-like question types a calculation's formula may refer to. */
export const FORMULA_SOURCE_TYPES: ReadonlySet<QuestionType> = new Set(
  (Object.keys(QUESTION_TYPE_SPECS) as QuestionType[]).filter((t) => QUESTION_TYPE_SPECS[t].formulaSource),
);

/** All option keys a type takes: its own, then its quiz options. */
export function optionRulesOf(type: QuestionType): Readonly<Record<string, OptionRule>> {
  const spec = QUESTION_TYPE_SPECS[type];
  return spec.quiz ? { ...spec.options, ...QUIZ_OPTIONS[spec.quiz] } : spec.options;
}

const snake = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const PAIRS = [['min_length', 'max_length'], ['min_selections', 'max_selections'], ['min_value', 'max_value'], ['min_date', 'max_date'], ['min', 'max']] as const;

/**
 * Checks and completes `options` for a question of `type`; answers them as stored: keys as
 * API.md writes them (snake_case; the camelCase spelling of each is accepted too), defaults filled
 * in, unknown keys refused, every minimum at most its maximum, then the type's own cross-checks.
 */
export function normalizeOptions(type: QuestionType, raw: unknown, context: OptionContext, path = 'options'): Options {
  if (raw === undefined || raw === null) raw = {};
  if (!isObject(raw)) throw invalid(path, 'must be an object');
  const rules = optionRulesOf(type);
  const given: Options = {};
  for (const [key, value] of Object.entries(raw)) {
    const name = snake(key);
    if (!Object.hasOwn(rules, name)) {
      const allowed = Object.keys(rules);
      const shown = key.length > 100 ? `${key.slice(0, 100)}…` : key;
      throw invalid(`${path}.${shown}`, allowed.length ? `unknown option for type ${type} (allowed: ${allowed.join(', ')})` : `a ${type} question takes no options`);
    }
    if (Object.hasOwn(given, name)) throw invalid(`${path}.${name}`, 'given twice (in two spellings)');
    given[name] = value;
  }
  const out: Options = {};
  for (const [name, rule] of Object.entries(rules)) {
    const at = `${path}.${name}`;
    const value = given[name];
    if (value === undefined || value === null) {
      if ('required' in rule && rule.required) throw invalid(at, `is required for type ${type}`);
      if ('default' in rule && rule.default !== undefined) out[name] = Array.isArray(rule.default) ? [...rule.default] : rule.default;
      continue;
    }
    out[name] = checkOptionValue(rule, value, at);
  }
  for (const [min, max] of PAIRS) {
    if (out[min] !== undefined && out[max] !== undefined && (out[min] as number | string) > (out[max] as number | string)) {
      throw invalid(`${path}.${min}`, `must not exceed ${max}`);
    }
  }
  QUESTION_TYPE_SPECS[type].crossCheck(out, path, context);
  return out;
}

/**
 * Why a calculation's formula does not resolve among these questions (a reference that names no
 * question, several, or one that is not number-like), or `null`. The formula's syntax is checked
 * already (`parseFormula`). `questions` is indexed once (`referenceIndex`) for all formulas of a form.
 */
export function formulaProblem(formula: string, questions: ReferenceIndex<OptionContext['questions'][number]>): string | null {
  for (const name of parseFormula(formula).refs) {
    const found = resolveReference(name, questions);
    const shown = `{{${name.length > 60 ? `${name.slice(0, 60)}…` : name}}}`;
    if ('problem' in found) return `refers to ${shown}, which ${found.problem}`;
    if (!FORMULA_SOURCE_TYPES.has(found.question.type)) {
      return `refers to a ${found.question.type} question (${shown}); only ${[...FORMULA_SOURCE_TYPES].join(', ')} questions can be used`;
    }
  }
  return null;
}
