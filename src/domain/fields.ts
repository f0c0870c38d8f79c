import { invalid } from './errors.js';

/** Field types of documents (API.md, Document fields). */
export const FIELD_TYPES = [
  'digital_signature',
  'initials',
  'short_text',
  'long_text',
  'date',
  'email',
  'phone',
  'number',
  'yes_no',
  'checkbox',
  'mcq',
  'multi_select',
  'dropdown',
  'rating',
  'file_upload',
] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

export const DIRECTIONS = ['auto', 'ltr', 'rtl'] as const;
export type Direction = (typeof DIRECTIONS)[number];

/**
 * What each field type takes, in one descriptor per type (a `Record<FieldType, …>`: a new type
 * does not compile until it is described): its default label, whether it needs `options.choices`,
 * and what its `defaultValue` may be (`text` anything, `date` a date or `__today__`, `choice` one of
 * its choices, `none` no default).
 */
interface FieldTypeSpec {
  label: string;
  choices: boolean;
  defaultValue: 'text' | 'date' | 'choice' | 'none';
}

export const FIELD_TYPE_SPECS: Record<FieldType, FieldTypeSpec> = {
  digital_signature: { label: 'Signature', choices: false, defaultValue: 'none' },
  initials: { label: 'Initials', choices: false, defaultValue: 'none' },
  short_text: { label: 'Text', choices: false, defaultValue: 'text' },
  long_text: { label: 'Text', choices: false, defaultValue: 'text' },
  date: { label: 'Date', choices: false, defaultValue: 'date' },
  email: { label: 'Email', choices: false, defaultValue: 'text' },
  phone: { label: 'Phone', choices: false, defaultValue: 'text' },
  number: { label: 'Number', choices: false, defaultValue: 'text' },
  yes_no: { label: 'Yes/No', choices: false, defaultValue: 'text' },
  checkbox: { label: 'Checkbox', choices: false, defaultValue: 'text' },
  mcq: { label: 'Choice', choices: true, defaultValue: 'choice' },
  multi_select: { label: 'Choices', choices: true, defaultValue: 'text' },
  dropdown: { label: 'Dropdown', choices: true, defaultValue: 'choice' },
  rating: { label: 'Rating', choices: false, defaultValue: 'text' },
  file_upload: { label: 'File', choices: false, defaultValue: 'none' },
};

export const CHOICE_FIELD_TYPES: ReadonlySet<FieldType> = new Set(FIELD_TYPES.filter((t) => FIELD_TYPE_SPECS[t].choices));

export function defaultLabel(type: FieldType): string {
  return FIELD_TYPE_SPECS[type].label;
}

/** A field's definition, without identity and bookkeeping. */
export interface FieldSpec {
  label: string;
  type: FieldType;
  pageNumber: number;
  x: number;
  y: number;
  width: number;
  height: number;
  isRequired: boolean;
  isReadOnly: boolean;
  assigneeRole: string | null;
  defaultValue: string | null;
  direction: Direction;
  options: { choices?: string[] };
}

// Fractions computed by clients (0.1 + 0.2) may overshoot 1 by a rounding error; that is not a mistake.
const EPSILON = 1e-9;
const DATE = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/;
export const TODAY = '__today__';

/** `YYYY-MM-DD` naming a day that exists (2026-02-29 does not; `Date` would roll it over). */
export function isCalendarDate(value: string): boolean {
  if (!DATE.test(value)) return false;
  // Arithmetic, not a Date object: evaluations check many dates per request.
  const year = Number(value.slice(0, 4));
  const month = Number(value.slice(5, 7));
  const day = Number(value.slice(8, 10));
  if (month < 1 || month > 12 || day < 1) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return day <= (month === 2 ? (leap ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31);
}

/** Most fields one document may hold. */
export const MAX_FIELDS_PER_DOCUMENT = 5000;

/**
 * Checks a whole field against the rules of API.md and the document's page count. `path` prefixes
 * the key in the hint (`fields[3].`), so bulk errors name the item.
 */
export function validateField(spec: FieldSpec, pageCount: number, path = ''): void {
  const at = (key: string) => `${path}${key}`;
  if (!Number.isInteger(spec.pageNumber) || spec.pageNumber < 1 || spec.pageNumber > pageCount) {
    throw invalid(at('pageNumber'), `must be a page of the document, from 1 to ${pageCount}`);
  }
  for (const key of ['x', 'y', 'width', 'height'] as const) {
    const value = spec[key];
    if (!Number.isFinite(value) || value < 0) throw invalid(at(key), 'must be ≥ 0');
    if (value > 1) throw invalid(at(key), 'must be ≤ 1');
  }
  if (spec.width <= 0) throw invalid(at('width'), 'must be > 0');
  if (spec.height <= 0) throw invalid(at('height'), 'must be > 0');
  if (spec.x + spec.width > 1 + EPSILON) throw invalid(at('x'), `x + width must be ≤ 1 (is ${spec.x + spec.width})`);
  if (spec.y + spec.height > 1 + EPSILON) throw invalid(at('y'), `y + height must be ≤ 1 (is ${spec.y + spec.height})`);
  if (spec.label.trim().length === 0) throw invalid(at('label'), 'must not be blank');

  const choices = spec.options.choices;
  if (CHOICE_FIELD_TYPES.has(spec.type)) {
    if (!choices || choices.length === 0) throw invalid(at('options.choices'), `is required for type ${spec.type}: a non-empty list of choices`);
    choices.forEach((choice, i) => {
      if (choice.trim().length === 0) throw invalid(at(`options.choices[${i}]`), 'must not be blank');
    });
    if (new Set(choices).size !== choices.length) throw invalid(at('options.choices'), 'must not repeat a choice');
  } else if (choices !== undefined) {
    throw invalid(at('options.choices'), `is only for the types ${[...CHOICE_FIELD_TYPES].join(', ')}`);
  }

  const value = spec.defaultValue;
  if (value !== null) {
    const takes = FIELD_TYPE_SPECS[spec.type].defaultValue;
    if (takes === 'none') throw invalid(at('defaultValue'), `a ${spec.type} field cannot have a default value`);
    if (value === TODAY && takes !== 'date') throw invalid(at('defaultValue'), `"${TODAY}" is only for date fields`);
    if (takes === 'date' && value !== TODAY && !isCalendarDate(value)) {
      throw invalid(at('defaultValue'), `must be a date YYYY-MM-DD or "${TODAY}" for a date field`);
    }
    if (takes === 'choice' && !choices?.includes(value)) throw invalid(at('defaultValue'), 'must be one of options.choices');
  }
}
