import crypto from 'node:crypto';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type {} from '@fastify/multipart';
import { HashThreadFailed, sha256Counter } from '../blobs/sha256.js';
import { AppError } from '../domain/errors.js';
import type { Store } from '../store/db.js';
import { claimKey, finishKey, releaseKey, renewKey, sweepKeys } from '../store/idempotency.js';
import { cleanFilename } from './document-answer.js';

/**
 * `Idempotency-Key` on every POST (API.md, Integration conveniences; Stripe's convention). The key
 * is claimed in the database before the handler runs (so it holds across servers), the first
 * answer is kept with the status, body and the headers below, and a retry with the same key gets
 * that answer again byte for byte with `Idempotent-Replayed: true`. The same key for another
 * method, path, query or body is `422 idempotency_key_reused`; a retry while the first still runs
 * is `409 idempotency_key_in_progress`.
 *
 * What is kept: every answer the handler gave below 500 (an error such as `404` or `409` is an
 * answer too, as at Stripe); a `5xx` (nothing was done, or it is unknown) lets the key go, and so
 * does a refused upload (nothing was kept of it). Requests refused before the handler (bad key,
 * missing grant, rate limit, a body that fails its schema) never claim the key.
 *
 * The fingerprint of a JSON request is the sha256 of its query and its parsed body with its keys
 * in order (so a retry may spell the keys in snake_case, order or space them differently). An
 * upload's is its file's sha256 and its title, read from the first answer; a retry of a finished
 * upload has its own read (the handler does not run) and compared.
 */

export const IDEMPOTENCY_HEADER = 'idempotency-key';
const VALID_KEY = /^[\x20-\x7e]{1,255}$/;
/** Headers of the first answer that a replay repeats (the body's type, where the resource is, its tag). */
const KEPT_HEADERS = ['content-type', 'location', 'etag'];

interface Pending {
  workspaceId: string;
  key: string;
  /** The claim's token (store/idempotency.ts): finishing or releasing touches only this claim. */
  token: string;
  upload: boolean;
  settled: boolean;
  /** The renewals of the claim, one after the other; the finish or release waits for them. */
  chain: Promise<void>;
  heartbeat?: NodeJS.Timeout;
  /** When the renewals stop whatever happens (the request time limit has passed by then). */
  renewUntil: number;
}

/**
 * How long a claim holds without its owner renewing it (every third of it while the request runs):
 * after a server dies, a retry waits at most this long (409) before it runs the request again.
 */
export const IDEMPOTENCY_LEASE_MS = 60_000;

export interface IdempotencyOptions {
  store: Store;
  now: () => number;
  /** The claim's lease (default IDEMPOTENCY_LEASE_MS), renewed every third of it while the request runs. */
  leaseMs?: number;
  /** How long a request may run: no claim is renewed for longer (a request whose end was never seen). */
  requestTimeoutMs: number;
  maxUploadBytes: number;
}

const SWEEP_EVERY_MS = 60_000;

export function registerIdempotency(app: FastifyInstance, options: IdempotencyOptions): void {
  const { store, now } = options;
  const leaseMs = options.leaseMs ?? IDEMPOTENCY_LEASE_MS;
  const pending = new WeakMap<FastifyRequest, Pending>();
  const replayed = new WeakSet<FastifyRequest>();
  let lastSweep = 0;

  // On the POST routes of the API only (route hooks: nothing is added to other requests' path).
  app.addHook('onRoute', (route: RouteOptions) => {
    if (![route.method].flat().includes('POST') || !route.url.startsWith('/api/v1/')) return;
    addRouteHook(route, 'preHandler', claim);
    addRouteHook(route, 'onSend', keep);
    addRouteHook(route, 'onResponse', letGo);
  });

  async function claim(request: FastifyRequest, reply: FastifyReply) {
    if (request.method !== 'POST' || !request.principal) return;
    const key = request.headers[IDEMPOTENCY_HEADER];
    if (key === undefined) return;
    if (typeof key !== 'string' || !VALID_KEY.test(key)) {
      throw new AppError('validation_failed', 'Idempotency-Key must be 1 to 255 printable ASCII characters (a UUID is a good choice), sent once.');
    }
    const workspaceId = request.principal.workspaceId;
    const [path, query = ''] = splitUrl(request.url);
    const upload = request.isMultipart();
    const nowMs = now();
    if (nowMs - lastSweep > SWEEP_EVERY_MS) {
      lastSweep = nowMs;
      sweepKeys(store.db, nowMs).catch((error: unknown) => request.log.warn({ err: error }, 'idempotency sweep failed'));
    }
    const fingerprint = upload ? null : jsonFingerprint(query, request.body);
    const legacy = upload ? null : legacyFingerprint(query, request.body);
    const claim = await claimKey(store.db, {
      workspaceId,
      key,
      method: request.method,
      path,
      fingerprint,
      legacyFingerprint: legacy,
      nowMs,
      leaseMs,
    });
    if (claim.kind === 'owner') {
      const state: Pending = {
        workspaceId, key, token: claim.token, upload, settled: false, chain: Promise.resolve(),
        renewUntil: nowMs + options.requestTimeoutMs + leaseMs,
      };
      state.heartbeat = setInterval(() => renew(request, state), Math.max(1, Math.floor(leaseMs / 3))).unref();
      pending.set(request, state);
      return;
    }
    const row = claim.row;
    // The rest of an upload that is refused here is not read: the connection cannot be used again.
    if (upload && row.state !== 'done') reply.header('connection', 'close');
    if (row.method !== request.method || row.path !== path) {
      if (upload) reply.header('connection', 'close');
      throw reused(`${row.method} ${row.path}`);
    }
    // Another body is refused whatever the first request's state (running, or left by a server
    // that died). A JSON claim always holds its fingerprint; an upload's is known once it is done.
    if (!upload && row.fingerprint !== fingerprint && row.fingerprint !== legacy) {
      throw reused(`${row.method} ${row.path} with another body`);
    }
    if (row.state !== 'done') {
      throw new AppError('idempotency_key_in_progress', 'A request with this Idempotency-Key is still running; retry once it has answered (in a moment) to get its answer.', { 'retry-after': '1' });
    }
    if (upload) {
      let retryFingerprint: string | null;
      try {
        retryFingerprint = await uploadFingerprint(request, options.maxUploadBytes, row.response_body);
      } catch (error) {
        // The rest of the body was not read (a failure of this process's, answered 500).
        reply.header('connection', 'close');
        throw error;
      }
      if (retryFingerprint !== row.fingerprint) throw reused(`${row.method} ${row.path} with another file or title`);
    }
    replayed.add(request);
    const headers = JSON.parse(row.response_headers ?? '{}') as Record<string, string>;
    for (const [name, value] of Object.entries(headers)) reply.header(name, value);
    reply.header('idempotent-replayed', 'true');
    return reply.code(row.response_status ?? 200).send(row.response_body ?? '');
  }

  // The owner's heartbeat: the lease moves on while the request runs, so that only a claim whose
  // server died (or cannot reach the database for a whole lease) is ever taken over.
  function renew(request: FastifyRequest, state: Pending) {
    state.chain = state.chain.then(async () => {
      if (state.settled) return;
      const nowMs = now();
      if (nowMs > state.renewUntil) {
        clearInterval(state.heartbeat); // its end was never seen: the lease now runs out
        return;
      }
      const next = new Date(nowMs + leaseMs).toISOString();
      if (next <= state.token) return;
      try {
        if (await renewKey(store.db, state.workspaceId, state.key, state.token, next)) state.token = next;
        else clearInterval(state.heartbeat); // taken over (this request outlived its lease): the retry's now
      } catch (error) {
        request.log.warn({ err: error }, 'could not renew the claim of an idempotent request');
      }
    });
  }

  /** Stops the heartbeat and waits for a renewal under way: `state.token` is then the claim's. */
  async function settle(state: Pending) {
    state.settled = true;
    clearInterval(state.heartbeat);
    await state.chain;
  }

  async function keep(request: FastifyRequest, reply: FastifyReply, payload: unknown) {
    const state = pending.get(request);
    if (!state || state.settled || replayed.has(request)) return payload;
    await settle(state);
    const status = reply.statusCode;
    const body = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : null;
    try {
      if (body === null || status >= 500 || (state.upload && (status < 200 || status >= 300))) {
        await releaseKey(store.db, state.workspaceId, state.key, state.token);
        return payload;
      }
      const headers: Record<string, string> = {};
      for (const name of KEPT_HEADERS) {
        const value = reply.getHeader(name);
        if (value !== undefined) headers[name] = String(value);
      }
      const fingerprint = state.upload ? fingerprintOfUploadAnswer(body) : undefined;
      await finishKey(store.db, state.workspaceId, state.key, state.token, { status, headers, body, fingerprint });
    } catch (error) {
      // The answer still goes out; the key stays claimed until its lease ends, so a retry in the
      // meantime is told to wait rather than run the request twice.
      request.log.error({ err: error }, 'could not keep the answer of an idempotent request');
    }
    return payload;
  }

  // A request that ended without its answer passing onSend lets its key go.
  async function letGo(request: FastifyRequest) {
    const state = pending.get(request);
    if (!state || state.settled) return;
    await settle(state);
    await releaseKey(store.db, state.workspaceId, state.key, state.token).catch(() => {});
  }
}

type HookName = 'preHandler' | 'onSend' | 'onResponse' | 'onRequestAbort';

/** Adds `hook` to one route's own hooks of `name`, after those it has. */
export function addRouteHook(route: RouteOptions, name: HookName, hook: (...args: never[]) => unknown): void {
  const options = route as unknown as Record<HookName, unknown>;
  const existing = options[name];
  options[name] = existing === undefined ? [hook] : [...(Array.isArray(existing) ? existing : [existing]), hook];
}

function splitUrl(url: string): [string, string] {
  const at = url.indexOf('?');
  return at === -1 ? [url, ''] : [url.slice(0, at), url.slice(at + 1)];
}

function sha256(text: string): string {
  return crypto.createHash('sha256').update(text).digest('hex');
}

function jsonFingerprint(query: string, body: unknown): string {
  return sha256(`json\n${query}\n${canonicalJson(body ?? null)}`);
}

/** JSON with every object's keys in code-unit order: `{"a":1,"b":2}` and `{"b":2,"a":1}` are one body. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const name of Object.keys(v).sort()) sorted[name] = (v as Record<string, unknown>)[name];
    return sorted;
  });
}

/**
 * The fingerprint kept by earlier releases (keys in the order sent): a retry of a request whose
 * key was claimed before an upgrade (kept 24 hours) still matches it.
 */
function legacyFingerprint(query: string, body: unknown): string {
  return sha256(`json\n${query}\n${JSON.stringify(body ?? null)}`);
}

function uploadKey(fileSha256: string, title: string): string {
  return sha256(`upload\n${fileSha256}\n${title}`);
}

/** An upload's fingerprint from its first answer: the stored file's sha256 and the document's title. */
function fingerprintOfUploadAnswer(body: string): string | null {
  try {
    const data = (JSON.parse(body) as { data?: { sha256?: unknown; title?: unknown } }).data;
    return typeof data?.sha256 === 'string' && typeof data.title === 'string' ? uploadKey(data.sha256, data.title) : null;
  } catch {
    return null;
  }
}

/**
 * The fingerprint of a retried upload: its file is read and hashed as it streams (never held),
 * and its title worked out as the upload route does (the `title` part, else the file's name).
 */
async function uploadFingerprint(request: FastifyRequest, maxBytes: number, firstAnswer: string | null): Promise<string | null> {
  let fileSha: string | null = null;
  let filename = '';
  let title: string | undefined;
  try {
    const parts = request.parts({ limits: { files: 1, fileSize: maxBytes, parts: 4, fields: 2, fieldSize: 4096 } });
    for await (const part of parts) {
      if (part.type === 'file') {
        const counter = sha256Counter();
        await pipeline(part.file, counter.stream, new Writable({ write: (_chunk, _encoding, callback) => callback() }));
        if (part.fieldname !== 'file' || part.file.truncated) return null;
        fileSha = await counter.digest();
        filename = part.filename;
      } else if (part.fieldname === 'title' && typeof part.value === 'string') {
        title = part.value.trim();
      }
    }
  } catch (error) {
    // The body could not be read as the upload it claims to be: not the same request. A failure of
    // this process's own (its hashing thread) is not the client's: it answers 500.
    if (error instanceof HashThreadFailed) throw error;
    return null;
  }
  if (fileSha === null || firstAnswer === null) return null;
  return uploadKey(fileSha, title ?? [...cleanFilename(filename)].slice(0, 200).join(''));
}

function reused(firstUse: string): AppError {
  return new AppError(
    'idempotency_key_reused',
    `This Idempotency-Key was first used for ${firstUse}; a key stands for one request. Use a new key for a different request.`,
  );
}

