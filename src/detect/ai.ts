/**
 * The optional `ai` detection engine: an OpenAI-compatible chat-completions endpoint reviews the
 * layout detector's candidates page by page (keep or drop, label, type, signer role, required,
 * optionally a better box). Only a page's text lines and its candidate boxes are sent, never the
 * file, its name or any id. Whatever the model answers is untrusted input: every value is checked
 * and anything unusable is ignored (with a warning). A page whose request fails (timeout, network,
 * HTTP error, unusable answer) keeps its layout candidates unchanged, with a warning.
 *
 * Uses only `fetch`, `AbortController`, `TextDecoder` and timers, so it runs in a worker thread too.
 */
import { CHOICE_FIELD_TYPES, FIELD_TYPES, type FieldType } from '../domain/fields.js';
import { pageRect } from './geometry.js';
import type { DetectedField, Rect } from './types.js';

export interface AiConfig {
  /** e.g. `http://127.0.0.1:8080/v1`; requests go to `${baseUrl}/chat/completions`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer …` when set. */
  apiKey: string | null;
  model: string;
  /** Per request (each attempt), body read included. */
  timeoutMs: number;
  /** Retries after a timeout, a network error, HTTP 429 or 5xx (and one after an unusable answer). */
  maxRetries: number;
}

export interface AiPageInput {
  pageNumber: number;
  /** the page's text lines, each with its box in fractions of the displayed page (origin top-left) */
  text: Array<{ str: string; rect: Rect }>;
  /** the layout detector's candidates for this page */
  candidates: DetectedField[];
}

export interface AiOptions {
  /** Aborting it (the job was stopped) rejects `refineWithAi` with the signal's reason. */
  signal?: AbortSignal;
  /** For tests. */
  fetch?: typeof fetch;
}

/** Types the model may give any candidate. Choice types need choices the model is not asked for. */
export const AI_FIELD_TYPES: readonly FieldType[] = FIELD_TYPES.filter((t) => !CHOICE_FIELD_TYPES.has(t));

const MAX_BODY_BYTES = 1024 * 1024;
const MAX_LABEL = 200;
const MIN_SIDE = 0.002;
const ROLE = /^[A-Za-z0-9_-]{1,64}$/;
const MAX_TEXT_LINES = 2000;
const MAX_TEXT_CHARS = 500;
const MAX_WARNINGS = 100;
const BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 2000;

const SYSTEM_PROMPT = [
  'You review form-field candidates found on one page of a document that people will fill in and sign.',
  'The user message is JSON: "text" lists the text lines of the page and "candidates" the boxes a layout detector thinks are fields to fill.',
  'Every rect is {"x","y","width","height"} in fractions of the page (0 to 1), origin at the top-left corner.',
  'For each candidate decide whether it is really a field to fill, and describe it from the text around it.',
  'Answer with one JSON object and nothing else:',
  '{"fields":[{"candidate":<index>,"keep":true|false,"label":"<short label, e.g. the text left of or above the box>","type":"<type>","role":"signer_1"|null,"required":true|false}]}',
  'Optionally add "rect" to a kept entry to correct its box (same units; it must stay on the page).',
  `"type" is one of: ${AI_FIELD_TYPES.join(', ')}.`,
  'digital_signature: a place to sign; initials: a place for initials; short_text: one line of text; long_text: several lines;',
  'date, email, phone, number: a value of that kind; yes_no: a yes/no question; checkbox: a box to tick; rating: a score;',
  'file_upload: an attachment. A candidate whose type is mcq, multi_select or dropdown may keep that type.',
  '"role": who fills the field when the document names several parties (signer_1 for the first, signer_2 for the second, …), else null.',
  '"keep": false for a candidate that is not a field to fill (a decorative line, a table border, text). Candidates you leave out stay as they are.',
].join('\n');

type FailureKind = 'transient' | 'fatal' | 'malformed';

class AttemptError extends Error {
  constructor(
    readonly kind: FailureKind,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Refines each page's candidates with the model, one request per page with candidates, one page
 * after another; answers every page's resulting fields, in page order then candidate order.
 * Candidates the model does not mention stay as the layout detector gave them (`source:
 * "layout"`); `keep: false` drops one; the others become `source: "ai"`. Problems go to `warnings`
 * (`ai: page N: …`). Rejects only when `options.signal` aborts.
 */
export async function refineWithAi(pages: AiPageInput[], config: AiConfig, warnings: string[], options: AiOptions = {}): Promise<DetectedField[]> {
  const warn = (message: string) => {
    if (warnings.length >= MAX_WARNINGS) return;
    warnings.push(config.apiKey ? message.split(config.apiKey).join('[redacted]') : message);
  };
  const out: DetectedField[] = [];
  for (const page of pages) {
    throwIfAborted(options.signal);
    if (page.candidates.length === 0) continue;
    let answer: { fields: unknown[] };
    try {
      answer = await ask(page, config, options);
    } catch (error) {
      throwIfAborted(options.signal);
      const message = error instanceof AttemptError ? error.message : 'the AI request failed';
      warn(`ai: page ${page.pageNumber}: ${message}; the layout result is used`);
      out.push(...page.candidates.map(copy));
      continue;
    }
    out.push(...applyAnswer(page, answer, warn));
  }
  return out;
}

function copy(field: DetectedField): DetectedField {
  return { ...field, rect: { ...field.rect }, options: field.options.choices ? { choices: [...field.options.choices] } : {} };
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw signal.reason ?? new Error('aborted');
}

const r4 = (n: number) => Math.round(n * 1e4) / 1e4;
const roundRect = (r: Rect): Rect => ({ x: r4(r.x), y: r4(r.y), width: r4(r.width), height: r4(r.height) });

/** The user message: the page's text lines and candidates, nothing else. */
function userMessage(page: AiPageInput): string {
  const text = page.text
    .filter((line) => typeof line.str === 'string' && line.str.trim() !== '')
    .slice(0, MAX_TEXT_LINES)
    .map((line) => ({ str: line.str.slice(0, MAX_TEXT_CHARS), rect: roundRect(line.rect) }));
  const candidates = page.candidates.map((c, index) => ({ index, rect: roundRect(c.rect), type: c.type, label: c.label }));
  return JSON.stringify({ text, candidates });
}

/** One page's request with its retries; answers the model's parsed `{ fields: [...] }`. */
async function ask(page: AiPageInput, config: AiConfig, options: AiOptions): Promise<{ fields: unknown[] }> {
  const body = JSON.stringify({
    model: config.model,
    temperature: 0,
    response_format: { type: 'json_object' },
    messages: [
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: userMessage(page) },
    ],
  });
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (config.apiKey) headers.authorization = `Bearer ${config.apiKey}`;
  const url = `${config.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  let malformedRetried = false;
  for (let attempt = 0; ; attempt++) {
    let retryAfterMs = 0;
    try {
      return await attemptOnce(url, headers, body, config.timeoutMs, options, (ms) => (retryAfterMs = ms));
    } catch (error) {
      throwIfAborted(options.signal);
      const failure = error instanceof AttemptError ? error : new AttemptError('transient', 'the AI request failed');
      const attempts = attempt + 1;
      const last =
        failure.kind === 'fatal' || attempt >= config.maxRetries || (failure.kind === 'malformed' && malformedRetried);
      if (last) throw new AttemptError(failure.kind, attempts > 1 ? `${failure.message} (${attempts} attempts)` : failure.message);
      if (failure.kind === 'malformed') malformedRetried = true;
      const backoff = Math.min(MAX_BACKOFF_MS, Math.max(BACKOFF_MS * 2 ** attempt, retryAfterMs));
      await sleep(backoff, options.signal);
    }
  }
}

async function attemptOnce(
  url: string,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
  options: AiOptions,
  onRetryAfter: (ms: number) => void,
): Promise<{ fields: unknown[] }> {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new Error('timeout'));
  }, timeoutMs);
  const outer = options.signal;
  const onAbort = () => controller.abort(outer?.reason);
  outer?.addEventListener('abort', onAbort, { once: true });
  const doFetch = options.fetch ?? fetch;
  try {
    let raw: string;
    try {
      if (outer?.aborted) throw outer.reason;
      const response = await doFetch(url, { method: 'POST', headers, body, signal: controller.signal, redirect: 'manual' });
      if (!response.ok) {
        void response.body?.cancel().catch(() => {});
        if (response.status === 429 || response.status >= 500) {
          if (response.status === 429) onRetryAfter(retryAfter(response.headers.get('retry-after')));
          throw new AttemptError('transient', `the AI endpoint answered HTTP ${response.status}`);
        }
        throw new AttemptError('fatal', `the AI endpoint answered HTTP ${response.status}`);
      }
      raw = await readCapped(response);
    } catch (error) {
      if (outer?.aborted) throw outer.reason;
      if (timedOut) throw new AttemptError('transient', `the AI endpoint timed out after ${timeoutMs} ms`);
      if (error instanceof AttemptError) throw error;
      throw new AttemptError('transient', `the AI endpoint could not be reached${networkCode(error)}`);
    }
    return parseAnswer(raw);
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener('abort', onAbort);
  }
}

/** `Retry-After` in seconds, as milliseconds (0 when absent or not a number of seconds). */
function retryAfter(value: string | null): number {
  if (value === null || !/^\d{1,6}$/.test(value.trim())) return 0;
  return Number(value.trim()) * 1000;
}

/** ` (ECONNREFUSED)`: the system error code of a failed fetch, when there is one; never a message that could echo the request. */
function networkCode(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown } } | null)?.cause;
  const code = cause?.code;
  return typeof code === 'string' && /^[A-Z0-9_]{1,40}$/.test(code) ? ` (${code})` : '';
}

async function readCapped(response: Response): Promise<string> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BODY_BYTES) {
      void reader.cancel().catch(() => {});
      throw new AttemptError('malformed', `the AI endpoint's answer is larger than ${MAX_BODY_BYTES} bytes`);
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    all.set(chunk, at);
    at += chunk.byteLength;
  }
  return new TextDecoder().decode(all);
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The model's `{ fields: [...] }` out of a chat-completions body. */
function parseAnswer(raw: string): { fields: unknown[] } {
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    throw new AttemptError('malformed', "the AI endpoint's answer is not JSON");
  }
  const choices = isObject(body) ? body.choices : undefined;
  const first = Array.isArray(choices) ? choices[0] : undefined;
  const message = isObject(first) ? first.message : undefined;
  const content = isObject(message) ? message.content : undefined;
  if (typeof content !== 'string') throw new AttemptError('malformed', "the AI endpoint's answer has no choices[0].message.content");
  // Some servers wrap the JSON in a Markdown code fence despite response_format.
  const fenced = /^\s*```(?:json)?\s*([\s\S]*?)\s*```\s*$/i.exec(content);
  let parsed: unknown;
  try {
    parsed = JSON.parse(fenced ? fenced[1]! : content);
  } catch {
    throw new AttemptError('malformed', "the model's answer is not JSON");
  }
  if (!isObject(parsed) || !Array.isArray(parsed.fields)) throw new AttemptError('malformed', `the model's answer has no "fields" list`);
  return { fields: parsed.fields };
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Label: control characters out, white space collapsed, at most 200 characters; `null` when nothing is left. */
function cleanLabel(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const clean = value.slice(0, 10 * MAX_LABEL).replace(/[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]/g, ' ').replace(/\s+/g, ' ').trim();
  if (clean === '') return null;
  // Never cut a surrogate pair in half.
  return Array.from(clean).slice(0, MAX_LABEL).join('').trim();
}

/** A corrected box clamped to the page; `null` when it is not four numbers or nothing usable is left on the page. */
function cleanRect(value: unknown): Rect | null {
  if (!isObject(value)) return null;
  const { x, y, width, height } = value;
  if (![x, y, width, height].every((n) => typeof n === 'number' && Number.isFinite(n))) return null;
  const left = Math.max(0, x as number);
  const top = Math.max(0, y as number);
  const right = Math.min(1, (x as number) + (width as number));
  const bottom = Math.min(1, (y as number) + (height as number));
  if (!(right - left >= MIN_SIDE && bottom - top >= MIN_SIDE)) return null;
  return pageRect(left, top, right, bottom);
}

/** Applies the model's entries to the page's candidates. */
function applyAnswer(page: AiPageInput, answer: { fields: unknown[] }, warn: (message: string) => void): DetectedField[] {
  const problems = { entries: 0, types: 0, rects: 0, roles: 0 };
  const decided = new Map<number, DetectedField | null>();
  const limit = Math.max(100, 4 * page.candidates.length);
  problems.entries += Math.max(0, answer.fields.length - limit);
  for (const entry of answer.fields.slice(0, limit)) {
    if (!isObject(entry)) {
      problems.entries++;
      continue;
    }
    const index = entry.candidate;
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= page.candidates.length || decided.has(index)) {
      problems.entries++;
      continue;
    }
    if (entry.keep !== undefined && typeof entry.keep !== 'boolean') {
      problems.entries++;
      continue;
    }
    if (entry.keep === false) {
      decided.set(index, null);
      continue;
    }
    const candidate = page.candidates[index]!;
    let type = candidate.type;
    if (entry.type !== undefined && entry.type !== candidate.type) {
      const named = entry.type;
      if (typeof named === 'string' && (AI_FIELD_TYPES as readonly string[]).includes(named)) type = named as FieldType;
      else problems.types++;
    }
    let rect = { ...candidate.rect };
    if (entry.rect !== undefined && entry.rect !== null) {
      const corrected = cleanRect(entry.rect);
      if (corrected) rect = corrected;
      else problems.rects++;
    }
    let assigneeRole = candidate.assigneeRole;
    if (entry.role !== undefined) {
      if (entry.role === null) assigneeRole = null;
      else if (typeof entry.role === 'string' && ROLE.test(entry.role)) assigneeRole = entry.role;
      else {
        assigneeRole = null;
        problems.roles++;
      }
    }
    decided.set(index, {
      type,
      label: cleanLabel(entry.label) ?? candidate.label,
      pageNumber: page.pageNumber,
      rect,
      confidence: candidate.confidence,
      source: 'ai',
      assigneeRole,
      isRequired: typeof entry.required === 'boolean' ? entry.required : candidate.isRequired,
      isReadOnly: candidate.isReadOnly,
      options: CHOICE_FIELD_TYPES.has(type) && candidate.options.choices ? { choices: [...candidate.options.choices] } : {},
    });
  }
  const parts: string[] = [];
  if (problems.entries) parts.push(`${problems.entries} unusable entr${problems.entries === 1 ? 'y' : 'ies'} ignored (not an object, an unknown or repeated candidate index, or a keep that is not true/false)`);
  if (problems.types) parts.push(`${problems.types} unknown or not allowed field type${problems.types === 1 ? '' : 's'} (the layout type is kept)`);
  if (problems.rects) parts.push(`${problems.rects} unusable box${problems.rects === 1 ? '' : 'es'} (the layout box is kept)`);
  if (problems.roles) parts.push(`${problems.roles} invalid role${problems.roles === 1 ? '' : 's'} (no role is set)`);
  if (parts.length) warn(`ai: page ${page.pageNumber}: ${parts.join('; ')}`);
  const fields: DetectedField[] = [];
  page.candidates.forEach((candidate, index) => {
    if (!decided.has(index)) fields.push(copy(candidate));
    else {
      const field = decided.get(index);
      if (field) fields.push(field);
    }
  });
  return fields;
}
