/**
 * The formsign client: every operation typed from the OpenAPI document (`src/schema.ts`, made by
 * openapi-typescript; calls through openapi-fetch: `client.GET('/api/v1/forms/{id}', { params:
 * { path: { id } } })`), plus the few things generation cannot give:
 *
 * - every `POST` carries an `Idempotency-Key` (a new UUID unless one is given), the same on each
 *   retry, so a retry after a timeout never creates a second resource;
 * - `429` and `503` (and `409 idempotency_key_in_progress`) are retried after `Retry-After`
 *   seconds (or a short backoff), at most `retries` times; so are network errors for requests
 *   that are safe to send again (GET, PUT, DELETE, and POST with its key);
 * - `uploadDocument` sends a file as multipart/form-data;
 * - `waitForParseJob` polls a parse job until it ends, waiting the job's `pollAfterMs`.
 */
import createClient, { type Client, type Middleware } from 'openapi-fetch';
import type { components, operations, paths } from './schema.js';

export type { components, operations, paths };

type JsonOf<R> = R extends { content: { 'application/json': infer T } } ? T : never;
export type ParseJob = JsonOf<operations['getParseJob']['responses'][200]>['data'];
export type Document = JsonOf<operations['uploadDocument']['responses'][201]>['data'];
export type ErrorBody = components['schemas']['ErrorEnvelope'];

export interface FormsignOptions {
  /** Where the service is, e.g. `http://127.0.0.1:3000`. */
  baseUrl: string;
  /** An API key (`fsk_…`). */
  apiKey: string;
  /** Retries of 429, 503 and network errors (default 3). */
  retries?: number;
  /** The longest wait between two attempts, whatever Retry-After says (default 60 s). */
  maxRetryDelayMs?: number;
  /** Used instead of `globalThis.fetch` (tests, proxies). */
  fetch?: (request: Request) => Promise<Response>;
  /** Waits `ms` (tests replace it). */
  sleep?: (ms: number) => Promise<void>;
}

export interface FormsignClient extends Client<paths> {
  /** Uploads a PDF or DOCX; `title` defaults to the file name. */
  uploadDocument(
    file: Blob | Uint8Array,
    options?: { filename?: string; title?: string; idempotencyKey?: string },
  ): Promise<{ data: Document | undefined; error: ErrorBody | undefined; response: Response }>;
  /** Polls a parse job until it is `completed` or `failed` (or `timeoutMs` passes: then it throws). */
  waitForParseJob(documentId: string, jobId: string, options?: { timeoutMs?: number }): Promise<ParseJob>;
}

export class FormsignError extends Error {
  constructor(
    readonly status: number,
    readonly body: ErrorBody | undefined,
  ) {
    super(body ? `${status} ${body.code}: ${body.hint}` : `HTTP ${status}`);
    this.name = 'FormsignError';
  }
}

const RETRY_STATUSES = new Set([429, 503]);
const SAFE_METHODS = new Set(['GET', 'HEAD', 'PUT', 'DELETE']);

/** Milliseconds to wait before attempt `attempt` (1-based retry count) after `response`. */
function retryDelay(response: Response | null, attempt: number, maxMs: number): number {
  const header = response?.headers.get('retry-after');
  if (header) {
    const seconds = Number(header);
    const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(header) - Date.now();
    if (Number.isFinite(ms)) return Math.min(Math.max(ms, 0), maxMs);
  }
  // No Retry-After: 250 ms, 500 ms, 1 s … with jitter.
  return Math.min(250 * 2 ** (attempt - 1) * (0.5 + Math.random()), maxMs);
}

/** `wait`, unless `signal` aborts first: then its reason is thrown at once. */
function abortable(wait: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    wait.then(
      () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

function isAbort(error: unknown): boolean {
  const name = (error as { name?: unknown } | null)?.name;
  return name === 'AbortError' || name === 'TimeoutError';
}

async function inProgress(response: Response): Promise<boolean> {
  if (response.status !== 409) return false;
  try {
    return ((await response.clone().json()) as { code?: string }).code === 'idempotency_key_in_progress';
  } catch {
    return false;
  }
}

export function createFormsignClient(options: FormsignOptions): FormsignClient {
  const baseFetch = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const retries = options.retries ?? 3;
  const maxDelay = options.maxRetryDelayMs ?? 60_000;

  /** Sends `request`, and a copy of it again while the answer says "later" (or the network failed and a retry is safe). */
  async function retryingFetch(request: Request): Promise<Response> {
    const repeatable = SAFE_METHODS.has(request.method) || request.headers.has('idempotency-key');
    for (let attempt = 0; ; attempt++) {
      let response: Response | null = null;
      try {
        response = await baseFetch(attempt < retries ? request.clone() : request);
      } catch (error) {
        // A request the caller aborted (or whose AbortSignal.timeout ran out) is not a network error.
        if (!repeatable || attempt >= retries || request.signal.aborted || isAbort(error)) throw error;
      }
      if (response && !(attempt < retries && (RETRY_STATUSES.has(response.status) || (await inProgress(response))))) return response;
      if (response) await response.body?.cancel();
      await abortable(sleep(retryDelay(response, attempt + 1, maxDelay)), request.signal);
    }
  }

  const client = createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: { authorization: `Bearer ${options.apiKey}` },
    fetch: retryingFetch,
  });

  const idempotency: Middleware = {
    onRequest({ request }) {
      if (request.method === 'POST' && !request.headers.has('idempotency-key')) request.headers.set('idempotency-key', crypto.randomUUID());
      return request;
    },
  };
  client.use(idempotency);

  async function uploadDocument(
    file: Blob | Uint8Array,
    upload: { filename?: string; title?: string; idempotencyKey?: string } = {},
  ): Promise<{ data: Document | undefined; error: ErrorBody | undefined; response: Response }> {
    const blob = file instanceof Blob ? file : new Blob([file as Uint8Array<ArrayBuffer>]);
    const form = new FormData();
    form.append('file', blob, upload.filename ?? 'document.pdf');
    if (upload.title !== undefined) form.append('title', upload.title);
    const { data, error, response } = await client.POST('/api/v1/documents', {
      // The multipart body is built here; the generated type describes its parts.
      body: { file: '', ...(upload.title !== undefined ? { title: upload.title } : {}) },
      bodySerializer: () => form,
      headers: upload.idempotencyKey ? { 'Idempotency-Key': upload.idempotencyKey } : {},
    });
    return { data: data?.data, error: error as ErrorBody | undefined, response };
  }

  async function waitForParseJob(documentId: string, jobId: string, wait: { timeoutMs?: number } = {}): Promise<ParseJob> {
    const deadline = Date.now() + (wait.timeoutMs ?? 10 * 60_000);
    for (;;) {
      const { data, error, response } = await client.GET('/api/v1/documents/{id}/parse-jobs/{jobId}', { params: { path: { id: documentId, jobId } } });
      if (!data) throw new FormsignError(response.status, error as ErrorBody | undefined);
      const job = data.data;
      if (job.status === 'completed' || job.status === 'failed') return job;
      if (Date.now() >= deadline) throw new Error(`parse job ${jobId} still ${job.status} after ${wait.timeoutMs ?? 600_000} ms`);
      await sleep(Math.min(Math.max(job.pollAfterMs ?? 1000, 50), Math.max(deadline - Date.now(), 0)));
    }
  }

  return Object.assign(client, { uploadDocument, waitForParseJob });
}
