import type { Kysely } from 'kysely';
import type { Database, IdempotencyKeyRow } from './schema.js';

/** How long a kept answer is replayed (API.md: 24 hours). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

export interface ClaimInput {
  workspaceId: string;
  key: string;
  method: string;
  path: string;
  fingerprint: string | null;
  /** The same request's fingerprint as earlier releases computed it (keys in the order sent), or null. */
  legacyFingerprint?: string | null;
  nowMs: number;
  /** How long the claim holds before a retry may take it over, unless its owner renews it (renewKey). */
  leaseMs: number;
}

/**
 * `token` is the claim's own `locked_until`: a takeover always moves it (the new lease ends later),
 * so the finish or release of a request whose claim was taken over changes nothing. The owner's
 * own renewals move it too, and the owner then holds the new value (renewKey).
 */
export type Claim = { kind: 'owner'; token: string } | { kind: 'existing'; row: IdempotencyKeyRow };

/**
 * Takes the key for this request, or answers the row another request holds. Atomic on both
 * databases (insert … on conflict do nothing): of any number of concurrent requests with one key,
 * in any number of processes, exactly one becomes the owner. An expired row is removed first; a
 * `running` row whose lease has passed (its server died) is taken over by a conditional update,
 * by a retry of the same request only (method, path, and the fingerprint when it is known).
 */
export async function claimKey(db: Kysely<Database>, input: ClaimInput): Promise<Claim> {
  const now = new Date(input.nowMs).toISOString();
  for (let attempt = 0; attempt < 3; attempt++) {
    const token = new Date(input.nowMs + input.leaseMs).toISOString();
    const inserted = await db
      .insertInto('idempotency_keys')
      .values({
        workspace_id: input.workspaceId,
        key: input.key,
        method: input.method,
        path: input.path,
        fingerprint: input.fingerprint,
        state: 'running',
        locked_until: token,
        response_status: null,
        response_headers: null,
        response_body: null,
        created_at: now,
        expires_at: new Date(input.nowMs + IDEMPOTENCY_TTL_MS).toISOString(),
      })
      .onConflict((oc) => oc.columns(['workspace_id', 'key']).doNothing())
      .executeTakeFirst();
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 1) return { kind: 'owner', token };
    const row = await db
      .selectFrom('idempotency_keys')
      .selectAll()
      .where('workspace_id', '=', input.workspaceId)
      .where('key', '=', input.key)
      .executeTakeFirst();
    if (!row) continue; // removed in between: try again
    if (row.expires_at <= now) {
      await db.deleteFrom('idempotency_keys').where('workspace_id', '=', input.workspaceId).where('key', '=', input.key).where('expires_at', '<=', now).execute();
      continue;
    }
    // Only the same request takes a claim over: another body is the caller's to refuse (422).
    const sameRequest = row.method === input.method && row.path === input.path && (input.fingerprint === null || row.fingerprint === input.fingerprint || (row.fingerprint !== null && row.fingerprint === input.legacyFingerprint));
    if (row.state === 'running' && row.locked_until <= now && sameRequest) {
      const taken = await db
        .updateTable('idempotency_keys')
        .set({ locked_until: token })
        .where('workspace_id', '=', input.workspaceId)
        .where('key', '=', input.key)
        .where('state', '=', 'running')
        .where('locked_until', '=', row.locked_until)
        .executeTakeFirst();
      // The new lease ends after now, the old one at or before it: the token has moved.
      if (Number(taken.numUpdatedRows) === 1) return { kind: 'owner', token };
      continue;
    }
    return { kind: 'existing', row };
  }
  throw new Error('idempotency key: could not claim or read the key');
}

/**
 * Moves a running claim's lease on to `next` (the owner's heartbeat): true when the claim was
 * still `token`'s, and `next` is its token from now on; false when it was taken over or finished.
 */
export async function renewKey(db: Kysely<Database>, workspaceId: string, key: string, token: string, next: string): Promise<boolean> {
  const renewed = await db
    .updateTable('idempotency_keys')
    .set({ locked_until: next })
    .where('workspace_id', '=', workspaceId)
    .where('key', '=', key)
    .where('state', '=', 'running')
    .where('locked_until', '=', token)
    .executeTakeFirst();
  return Number(renewed.numUpdatedRows) === 1;
}

/** Keeps the first request's answer; `fingerprint` is set now when it was not known at the claim (uploads). */
export async function finishKey(
  db: Kysely<Database>,
  workspaceId: string,
  key: string,
  token: string,
  answer: { status: number; headers: Record<string, string>; body: string; fingerprint?: string | null },
): Promise<void> {
  await db
    .updateTable('idempotency_keys')
    .set({
      state: 'done',
      response_status: answer.status,
      response_headers: JSON.stringify(answer.headers),
      response_body: answer.body,
      ...(answer.fingerprint !== undefined ? { fingerprint: answer.fingerprint } : {}),
    })
    .where('workspace_id', '=', workspaceId)
    .where('key', '=', key)
    .where('state', '=', 'running')
    .where('locked_until', '=', token)
    .execute();
}

/** Lets the key go (the request had no lasting effect: a 5xx, an upload refused): a retry runs again. */
export async function releaseKey(db: Kysely<Database>, workspaceId: string, key: string, token: string): Promise<void> {
  await db
    .deleteFrom('idempotency_keys')
    .where('workspace_id', '=', workspaceId)
    .where('key', '=', key)
    .where('state', '=', 'running')
    .where('locked_until', '=', token)
    .execute();
}

/** Removes expired rows, at most `limit` of them (a periodic sweep keeps the table small). */
export async function sweepKeys(db: Kysely<Database>, nowMs: number, limit = 1000): Promise<number> {
  const now = new Date(nowMs).toISOString();
  const expired = db.selectFrom('idempotency_keys').select('key').where('expires_at', '<=', now).limit(limit);
  const result = await db
    .deleteFrom('idempotency_keys')
    .where('expires_at', '<=', now)
    .where('key', 'in', expired)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
