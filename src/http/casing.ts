import { invalid } from '../domain/errors.js';

/**
 * Request bodies use camelCase keys; the snake_case spelling of any key is accepted too. This
 * turns `section_id` into `sectionId` at every depth, except inside the values of `opaque` keys
 * (free objects such as a form's `settings`, kept exactly as given). Both spellings of one key in
 * one object is a 400. The returned map remembers what the client actually wrote, so that a hint
 * about an unknown key can quote it.
 */
export type Renames = Map<string, string>;

/** `_x` → `X` for a lower-case letter or digit `x` (a loop: a body may hold tens of thousands of keys). */
export function snakeToCamel(key: string): string {
  let at = key.indexOf('_');
  if (at === -1) return key;
  let out = '';
  let from = 0;
  while (at !== -1 && at < key.length - 1) {
    const next = key.charCodeAt(at + 1);
    if ((next >= 97 && next <= 122) || (next >= 48 && next <= 57)) {
      out += key.slice(from, at) + key[at + 1]!.toUpperCase();
      from = at + 2;
      at = key.indexOf('_', from);
    } else {
      at = key.indexOf('_', at + 1);
    }
  }
  return out + key.slice(from);
}

/**
 * Keys of one object whose keys are the API's (not free objects such as `settings` or an
 * evaluation's `answers`, which are not renamed): none has more than a few dozen. Refused before
 * any is renamed.
 */
export const MAX_KEYS = 5_000;

/** Members and items one JSON body may hold: far more than any request needs (README, Limits). */
export const MAX_JSON_VALUES = 100_000;

/**
 * What JSON.parse would build, counted before it runs, in one pass over the text: bodies nested
 * far deeper than any request needs, or holding more values than the limit, are refused here, at
 * about a millisecond a MiB, rather than parsed (up to a tenth of a second of the event loop for a
 * MiB of `[[[…` or of `{},{},…`). Brackets and commas inside strings do not count. Returns the
 * hint of the refusal, or null.
 */
export function precheckJson(text: string): string | null {
  let depth = 0;
  let values = 0;
  let inString = false;
  // Per open bracket: whether it is an object, and its members so far (commas seen, plus one).
  const isObject: boolean[] = [];
  const members: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++; // a backslash: the next character is escaped
      else if (c === 34) inString = false;
      continue;
    }
    if (c === 34) inString = true;
    else if (c === 91 || c === 123) {
      if (++depth > 2 * MAX_DEPTH) return `body: is nested more than ${MAX_DEPTH} levels deep`;
      isObject[depth] = c === 123;
      members[depth] = 1;
      values++;
    } else if (c === 93 || c === 125) depth--;
    else if (c === 44) {
      if (++values > MAX_JSON_VALUES) return `body: holds more than ${MAX_JSON_VALUES.toLocaleString('en-US')} values (members and items), the limit of any JSON body (README, Limits)`;
      if (depth > 0 && isObject[depth] && ++members[depth]! > PRECHECK_KEYS) {
        return `body: holds an object of more than ${PRECHECK_KEYS.toLocaleString('en-US')} keys; no object of this API holds more than ${MAX_KEYS.toLocaleString('en-US')}`;
      }
    }
  }
  return null;
}

/**
 * Keys of one object that the precheck refuses, before parsing: more than MAX_KEYS (checked with
 * its path after parsing) and than a free object within its own limit can hold (64 KiB of
 * `settings` holds fewer than 10,000 distinct keys).
 */
const PRECHECK_KEYS = 16_384;

/**
 * A JSON number too large for a double (`1e400`) parses as Infinity, which JSON cannot hold: it
 * would be kept as `null`. Refused rather than changed ("kept as given").
 */
const OUT_OF_RANGE = 'holds a number out of range (beyond ±1.8e308); send a smaller number';

/** Half of a surrogate pair alone (`"\ud800"`, valid JSON): no character, stored as U+FFFD. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** The rules every string of a body keeps: no NUL (PostgreSQL cannot store it; no client means to send it), no lone surrogate. */
function checkString(value: string, path: string): void {
  if (value.includes('\u0000')) throw invalid(path, 'must not contain the NUL character (U+0000)');
  if (LONE_SURROGATE.test(value)) throw invalid(path, 'holds half of a UTF-16 surrogate pair (\\ud800-\\udfff alone), which is no character');
}

/** Deeper JSON than any request of this API needs; refusing it keeps recursion bounded. */
export const MAX_DEPTH = 32;

export function camelizeBody(body: unknown, opaque: ReadonlySet<string>, renames: Renames): unknown {
  return walk(body, '', opaque, renames, 0);
}

function walk(value: unknown, path: string, opaque: ReadonlySet<string>, renames: Renames, depth: number): unknown {
  if (depth > MAX_DEPTH) throw invalid(path, `is nested more than ${MAX_DEPTH} levels deep`);
  if (typeof value === 'string') checkString(value, path);
  if (typeof value === 'number' && !Number.isFinite(value)) throw invalid(path, OUT_OF_RANGE);
  if (Array.isArray(value)) return value.map((item, i) => walk(item, `${path}[${i}]`, opaque, renames, depth + 1));
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  const source = value as Record<string, unknown>;
  const keys = Object.keys(source);
  if (keys.length > MAX_KEYS) throw invalid(path || 'body', `has ${keys.length} keys; no object of this API holds more than ${MAX_KEYS.toLocaleString('en-US')}`);
  for (const key of keys) {
    const camel = key.includes('_') ? snakeToCamel(key) : key;
    const childPath = path ? `${path}.${camel}` : camel;
    if (Object.prototype.hasOwnProperty.call(out, camel)) {
      const other = Object.keys(source).find((k) => k !== key && (k === camel || snakeToCamel(k) === camel));
      throw invalid(childPath, `given twice, as "${other ?? camel}" and "${key}"; send one spelling`);
    }
    if (camel !== key) renames.set(childPath, key);
    if (opaque.has(camel)) {
      checkDepth(source[key], childPath, depth + 1);
      out[camel] = source[key];
    } else {
      out[camel] = walk(source[key], childPath, opaque, renames, depth + 1);
    }
  }
  return out;
}

/** The depth and NUL rules for a whole body of free JSON, kept as given (no key casing). */
export function checkFreeBody(body: unknown): unknown {
  checkDepth(body, '', 0);
  return body;
}

/** The depth and NUL rules for free JSON kept as given, without recursion. */
function checkDepth(value: unknown, path: string, depth: number): void {
  // Two parallel stacks rather than a pair per item: an evaluation's answers hold thousands.
  const items: unknown[] = [value];
  const levels: number[] = [depth];
  while (items.length > 0) {
    const item = items.pop();
    const level = levels.pop()!;
    if (typeof item === 'string') {
      checkString(item, path);
      continue;
    }
    if (typeof item === 'number' && !Number.isFinite(item)) throw invalid(path, OUT_OF_RANGE);
    if (item === null || typeof item !== 'object') continue;
    if (level > MAX_DEPTH) throw invalid(path, `is nested more than ${MAX_DEPTH} levels deep`);
    const children = Array.isArray(item) ? item : Object.values(item);
    for (let i = 0; i < children.length; i++) {
      items.push(children[i]);
      levels.push(level + 1);
    }
  }
}
