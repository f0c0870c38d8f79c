import { invalid } from '../domain/errors.js';

/**
 * Request bodies use camelCase keys; the snake_case spelling of any key is accepted too. This
 * turns `section_id` into `sectionId` at every depth, except inside the values of `opaque` keys
 * (free objects such as a form's `settings`, kept exactly as given). Both spellings of one key in
 * one object is a 400. The returned map remembers what the client actually wrote, so that a hint
 * about an unknown key can quote it.
 */
export type Renames = Map<string, string>;

export function snakeToCamel(key: string): string {
  return key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

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
  for (const key of Object.keys(source)) {
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
