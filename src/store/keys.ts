import { sql, type Kysely } from 'kysely';
import { KEY_CHANNEL, type ChangeWatch, type Store } from './db.js';
import { generateKey, hashKey, keyPrefix, looksLikeKey, sameHash } from '../domain/keys.js';
import { newId } from '../domain/ids.js';
import { isoNow, systemClock, type Clock } from '../domain/clock.js';
import type { Permission } from '../domain/grants.js';
import type { Database, ApiKeyRow } from './schema.js';
import { preparedQuery } from './prepared.js';

export interface ApiKeyInfo {
  id: string;
  workspaceId: string;
  workspace: string;
  name: string;
  prefix: string;
  grants: Permission[];
  expiresAt: string | null;
  revokedAt: string | null;
  createdAt: string;
}

/** The identity a verified key gives a request. */
export interface Principal {
  keyId: string;
  workspaceId: string;
  grants: ReadonlySet<Permission>;
  /** Epoch milliseconds, or `null` for a key that does not expire. */
  expiresAt: number | null;
}

export type KeyCheck =
  | { ok: true; principal: Principal }
  | { ok: false; reason: 'unknown' | 'revoked' | 'expired' };

export interface CreateKeyInput {
  workspace: string;
  name: string;
  grants: Permission[];
  expiresAt: string | null;
}

export async function createKey(db: Kysely<Database>, input: CreateKeyInput): Promise<{ key: string; info: ApiKeyInfo }> {
  const key = generateKey();
  const now = new Date().toISOString();
  const id = newId();
  const workspaceId = await db.transaction().execute(async (trx) => {
    // Created on first use; a concurrent creator of the same slug wins harmlessly.
    await trx
      .insertInto('workspaces')
      .values({ id: newId(), slug: input.workspace, created_at: now })
      .onConflict((oc) => oc.column('slug').doNothing())
      .execute();
    const workspace = await trx.selectFrom('workspaces').select('id').where('slug', '=', input.workspace).executeTakeFirstOrThrow();
    await trx
      .insertInto('api_keys')
      .values({
        id,
        workspace_id: workspace.id,
        name: input.name,
        prefix: keyPrefix(key),
        key_hash: hashKey(key),
        grants: JSON.stringify(input.grants),
        expires_at: input.expiresAt,
        revoked_at: null,
        created_at: now,
      })
      .execute();
    return workspace.id;
  });
  return {
    key,
    info: {
      id,
      workspaceId,
      workspace: input.workspace,
      name: input.name,
      prefix: keyPrefix(key),
      grants: input.grants,
      expiresAt: input.expiresAt,
      revokedAt: null,
      createdAt: now,
    },
  };
}

export async function listKeys(db: Kysely<Database>): Promise<ApiKeyInfo[]> {
  const rows = await db
    .selectFrom('api_keys')
    .innerJoin('workspaces', 'workspaces.id', 'api_keys.workspace_id')
    .selectAll('api_keys')
    .select('workspaces.slug')
    .orderBy('api_keys.created_at')
    .orderBy('api_keys.id')
    .execute();
  return rows.map((row) => toInfo(row, row.slug));
}

/**
 * Marks a key revoked; `false` when there is no such key. Revoking twice keeps the first time.
 * Every running server stops accepting the key at once: on PostgreSQL the revocation is
 * announced on `KEY_CHANNEL` when it commits; on SQLite the servers see the file change.
 */
export async function revokeKey(store: Store, id: string, clock: Clock = systemClock): Promise<boolean> {
  const found = await store.db.transaction().execute(async (trx) => {
    const found = await trx.selectFrom('api_keys').select('id').where('id', '=', id).executeTakeFirst();
    if (!found) return false;
    await trx
      .updateTable('api_keys')
      .set({ revoked_at: isoNow(clock) })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .execute();
    if (store.dialect === 'postgres') await sql`select pg_notify(${KEY_CHANNEL}, ${id})`.execute(trx);
    return true;
  });
  if (found) store.keysChanged();
  return found;
}

const keysByPrefix = preparedQuery<
  Pick<ApiKeyRow, 'id' | 'workspace_id' | 'key_hash' | 'grants' | 'expires_at' | 'revoked_at'>,
  [string]
>(1, (db: Kysely<Database>, prefix) =>
  db
    .selectFrom('api_keys')
    .select(['id', 'workspace_id', 'key_hash', 'grants', 'expires_at', 'revoked_at'])
    .where('prefix', '=', prefix),
);

export async function verifyKey(db: Kysely<Database>, candidate: string, now: Date): Promise<KeyCheck> {
  if (!looksLikeKey(candidate)) return { ok: false, reason: 'unknown' };
  const rows = await keysByPrefix(db, keyPrefix(candidate));
  const hash = hashKey(candidate);
  const row = rows.find((r) => sameHash(r.key_hash, hash));
  if (!row) return { ok: false, reason: 'unknown' };
  if (row.revoked_at !== null) return { ok: false, reason: 'revoked' };
  if (row.expires_at !== null && Date.parse(row.expires_at) <= now.getTime()) return { ok: false, reason: 'expired' };
  return {
    ok: true,
    principal: {
      keyId: row.id,
      workspaceId: row.workspace_id,
      grants: new Set(JSON.parse(row.grants) as Permission[]),
      expiresAt: row.expires_at === null ? null : Date.parse(row.expires_at),
    },
  };
}

export interface KeyVerifier {
  /** Synchronous when the key is remembered; a promise when the database is asked. */
  verify(candidate: string, now: Date): KeyCheck | Promise<KeyCheck>;
}

/**
 * Verifies keys against the database and remembers a verified key for `ttlMs`, so that a busy
 * client costs one key lookup every few seconds instead of one per request. Expiry is checked on
 * every request all the same. A revocation, by this process or any other, empties the memory
 * before the next request is checked (`changes`; while changes cannot be heard, nothing
 * remembered is used). Failures are never remembered, so a key works the moment it is created.
 */
export function createKeyVerifier(
  db: Kysely<Database>,
  ttlMs: number,
  watch: ((invalidate: () => void) => ChangeWatch) | null,
  maxEntries = 10_000,
): KeyVerifier & { close(): Promise<void> } {
  // Keyed by the key's hash, so that no secret sits in this map; least recently used goes first.
  const cache = new Map<string, { principal: Principal; until: number }>();
  // Moves with every invalidation: a lookup that was under way meanwhile may have read the row
  // before the change, and its answer is then not remembered.
  let generation = 0;
  const changes = watch?.((): void => {
    cache.clear();
    generation++;
  }) ?? null;
  return {
    close: async () => changes?.close(),
    verify(candidate, now) {
      if (ttlMs <= 0 || !looksLikeKey(candidate) || (changes !== null && !changes.current())) return verifyKey(db, candidate, now);
      const at = now.getTime();
      const id = hashKey(candidate);
      const cached = cache.get(id);
      if (cached && cached.until > at) {
        const { expiresAt } = cached.principal;
        if (expiresAt !== null && expiresAt <= at) {
          cache.delete(id);
          return { ok: false, reason: 'expired' };
        }
        cache.delete(id);
        cache.set(id, cached);
        return { ok: true, principal: cached.principal };
      }
      const asked = generation;
      return verifyKey(db, candidate, now).then((check) => {
        cache.delete(id);
        if (check.ok && asked === generation) {
          if (cache.size >= maxEntries) cache.delete(cache.keys().next().value!);
          cache.set(id, { principal: check.principal, until: at + ttlMs });
        }
        return check;
      });
    },
  };
}

function toInfo(row: ApiKeyRow, slug: string): ApiKeyInfo {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    workspace: slug,
    name: row.name,
    prefix: row.prefix,
    grants: JSON.parse(row.grants) as Permission[],
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
    createdAt: row.created_at,
  };
}
