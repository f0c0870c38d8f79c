import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import type { Renames } from './casing.js';

// ajv-formats is CommonJS with a default export.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/**
 * Two validators: request bodies are checked strictly (no type coercion: `"5"` is not a number,
 * no key is dropped, no default is filled in), while path and query parameters, which are
 * always text on the wire, are coerced to the types their schemas declare.
 */
export function makeValidatorCompiler(): FastifySchemaCompiler<unknown> {
  const common = { allErrors: false, removeAdditional: false, useDefaults: false, strict: false, verbose: true } as const;
  const bodyAjv = new Ajv({ ...common, coerceTypes: false });
  const paramAjv = new Ajv({ ...common, coerceTypes: 'array' });
  addFormats(bodyAjv);
  addFormats(paramAjv);
  const cache = new WeakMap<object, ValidateFunction>();
  return ({ schema, httpPart }) => {
    const ajv = httpPart === 'body' ? bodyAjv : paramAjv;
    const key = schema as object;
    const cached = httpPart === 'body' ? undefined : cache.get(key);
    if (cached) return cached;
    const compiled = ajv.compile(schema as object);
    if (httpPart !== 'body') cache.set(key, compiled);
    return compiled;
  };
}

/** `/fields/3/x` → `fields[3].x`. */
export function jsonPointerToPath(pointer: string): string {
  let out = '';
  for (const raw of pointer.split('/').slice(1)) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    out += /^[0-9]+$/.test(part) ? `[${part}]` : out ? `.${part}` : part;
  }
  return out;
}

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

/** Comparisons as the contract writes them (`fields[3].x: must be ≤ 1`). */
const COMPARISON: Record<string, string> = { '<=': '≤', '>=': '≥' };

/** One readable sentence for the first schema violation, naming where it is. */
export function describeAjvError(error: ErrorObject, context: string, renames?: Renames): string {
  const path = jsonPointerToPath(error.instancePath);
  const where = (p: string) => (p ? `${p}: ` : context === 'body' ? 'body: ' : `${context}: `);
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'additionalProperties': {
      // Named by its own path (`fields[1].colour`), as every other validation error is.
      const key = String(params.additionalProperty);
      const written = renames?.get(join(path, key)) ?? key;
      const allowed = Object.keys((error.parentSchema as { properties?: object } | undefined)?.properties ?? {});
      const kind = context === 'querystring' ? 'query parameter' : 'key';
      return `${join(path, written)}: unknown ${kind}${allowed.length ? ` (allowed: ${allowed.join(', ')})` : ''}`;
    }
    case 'required':
      return `${join(path, String(params.missingProperty))}: is required`;
    case 'type': {
      const expected = String(params.type).replace(/,/g, ' or ');
      const article = /^[aeiou]/.test(expected) ? 'an' : 'a';
      return `${where(path)}must be ${article} ${expected}`;
    }
    case 'enum':
      return `${where(path)}must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'const':
      return `${where(path)}must be ${JSON.stringify(params.allowedValue)}`;
    case 'minLength':
      return `${where(path)}must be at least ${String(params.limit)} character${params.limit === 1 ? '' : 's'} long`;
    case 'maxLength':
      return `${where(path)}must be at most ${String(params.limit)} characters long`;
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return `${where(path)}must be ${COMPARISON[String(params.comparison)] ?? String(params.comparison)} ${String(params.limit)}`;
    case 'minItems':
      return `${where(path)}must have at least ${String(params.limit)} item${params.limit === 1 ? '' : 's'}`;
    case 'maxItems':
      return `${where(path)}must have at most ${String(params.limit)} items`;
    case 'anyOf':
    case 'oneOf': {
      // A nullable value (`T | null`) fails both branches: name the non-null expectation.
      const branches = ((error.parentSchema as { anyOf?: Array<{ type?: string }> })?.anyOf ?? []).map((b) => b.type).filter(Boolean);
      if (branches.length) return `${where(path)}must be ${branches.map((t) => (t === 'null' ? 'null' : `a ${t}`)).join(' or ')}`;
      return `${where(path)}${error.message ?? 'is not valid'}`;
    }
    default:
      return `${where(path)}${error.message ?? 'is not valid'}`;
  }
}

/**
 * With `allErrors` off Ajv stops at the first failure, except inside `anyOf`, where it reports
 * every branch and then the `anyOf` itself. Prefer a branch's specific complaint ("at most 1000
 * characters") over "must be a string or null" when the value had the right type.
 */
export function pickAjvError(errors: ErrorObject[]): ErrorObject | undefined {
  const union = errors.find((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf');
  if (!union) return unknownKeyFirst(errors[0]);
  const branches = errors.filter((e) => e !== union && e.instancePath.startsWith(union.instancePath));
  return unknownKeyFirst(branches.find((e) => e.keyword !== 'type') ?? union);
}

/**
 * Ajv checks `required` before `additionalProperties`, so `{"titel": "x"}` would be told that
 * `title` is required and never hear of `titel`. A missing key beside an unknown one is most often
 * that key misspelt: the unknown key is named instead (API.md: an unknown key is `400` naming it).
 */
function unknownKeyFirst(error: ErrorObject | undefined): ErrorObject | undefined {
  if (error?.keyword !== 'required') return error;
  const schema = error.parentSchema as { properties?: Record<string, unknown>; additionalProperties?: unknown } | undefined;
  const data = error.data as unknown;
  if (schema?.additionalProperties !== false || data === null || typeof data !== 'object' || Array.isArray(data)) return error;
  const known = schema.properties ?? {};
  const unknown = Object.keys(data).find((key) => !Object.hasOwn(known, key));
  if (unknown === undefined) return error;
  return { ...error, keyword: 'additionalProperties', params: { additionalProperty: unknown }, message: 'must NOT have additional properties' };
}
