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

export function camelizeBody(body: unknown, opaque: ReadonlySet<string>, renames: Renames): unknown {
  return walk(body, '', opaque, renames);
}

function walk(value: unknown, path: string, opaque: ReadonlySet<string>, renames: Renames): unknown {
  if (Array.isArray(value)) return value.map((item, i) => walk(item, `${path}[${i}]`, opaque, renames));
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
    out[camel] = opaque.has(camel) ? source[key] : walk(source[key], childPath, opaque, renames);
  }
  return out;
}
