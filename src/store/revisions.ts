import { sql, type Kysely, type Transaction } from 'kysely';
import { AppError, notFound } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import { definitionHash, type DocumentDefinition, type FormDefinition } from '../domain/revisions.js';
import type { Page } from './page.js';
import type { Database } from './schema.js';

export interface RevisionView {
  id: string;
  formId?: string;
  documentId?: string;
  version: number;
  publishedAt: string;
  publishedBy: string;
  changesSummary: string;
}

export interface PublishOptions {
  /** Id of the API key that publishes. */
  keyId: string;
  /** The client's summary; generated from the diff when absent. */
  changesSummary?: string | null;
  /** Bytes of snapshots the workspace may store in all (default `DEFAULT_REVISION_BYTES`). */
  budgetBytes?: number;
}

/** The default budget of revision snapshots per workspace (`REVISION_BYTES_PER_WORKSPACE`): 1 GiB. */
export const DEFAULT_REVISION_BYTES = 1024 * 1024 * 1024;

/**
 * Counts `bytes` more snapshot storage against the workspace's budget, or refuses (`413`, the
 * caller's transaction rolled back) when they do not fit. One conditional row update: exact under
 * concurrent publishes on any number of servers (they queue on the workspace's row).
 */
async function chargeRevisionBytes(trx: Transaction<Database>, workspaceId: string, bytes: number, budget: number): Promise<void> {
  const result = await trx
    .updateTable('workspaces')
    .set((eb) => ({ revision_bytes: eb('revision_bytes', '+', bytes) }))
    .where('id', '=', workspaceId)
    .where((eb) => eb(eb('revision_bytes', '+', bytes), '<=', budget))
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) > 0) return;
  const row = await trx.selectFrom('workspaces').select('revision_bytes').where('id', '=', workspaceId).executeTakeFirst();
  const used = Number(row?.revision_bytes ?? 0);
  throw new AppError(
    'payload_too_large',
    `Publishing would store a ${bytes.toLocaleString('en-US')}-byte snapshot; this workspace stores ${used.toLocaleString('en-US')} bytes of revisions ` +
      `and may store at most ${budget.toLocaleString('en-US')} (the revision storage budget per workspace). Delete forms or documents you no longer need ` +
      'for good (DELETE …?permanent=true) to free their revisions, then publish again.',
  );
}

/**
 * Gives back to the workspace's budget what the revisions of a form or document take, in the
 * transaction that deletes it for good (before the rows cascade away).
 */
export async function releaseRevisionBytes(trx: Transaction<Database>, kind: RevisionKind, workspaceId: string, parentId: string): Promise<void> {
  const t = TABLES[kind];
  const row = (await (trx as Transaction<any>)
    .selectFrom(t.revisions)
    .select((eb: any) => eb.fn.coalesce(eb.fn.sum(sql`octet_length(snapshot)`), sql.lit(0)).as('bytes'))
    .where(t.parentColumn, '=', parentId)
    .executeTakeFirst()) as { bytes: number | string } | undefined;
  const bytes = Number(row?.bytes ?? 0);
  if (bytes === 0) return;
  await trx
    .updateTable('workspaces')
    .set((eb) => ({ revision_bytes: eb('revision_bytes', '-', bytes) }))
    .where('id', '=', workspaceId)
    .execute();
}

export const noChanges = (kind: string) =>
  new AppError('no_changes', `Nothing changed since the last revision of this ${kind}; change the draft first, then publish.`);

function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/**
 * Runs a publishing transaction, again when it lost a race for a version number. Publishing holds
 * the row lock of the form or document, so versions are consecutive already; the unique constraint
 * on (parent, version) is the guarantee, and this the recovery should anything slip past the lock.
 */
export async function withVersionRetry<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (attempt >= 5 || !isUniqueViolation(error)) throw error;
    }
  }
}

/** The next version: the parent's row (locked) holds the latest, as `freeze` keeps it. */
export const nextVersion = (row: { current_version: number | null }) => Number(row.current_version ?? 0) + 1;

/** A snapshot ready to store: its JSON text, its definition's hash, and its summary. */
export interface Frozen {
  hash: string;
  text: string;
  /** The summary when already known (the client's, or generated beforehand); else `describe` makes it. */
  summary: string | null;
  /** The generated summary, from the previous revision's snapshot (`null` for the first). */
  describe(previous: unknown): string;
}

/** `Frozen` for a snapshot built in the transaction. */
export function frozenOf(snapshot: unknown, definition: FormDefinition | DocumentDefinition, describe: (previous: unknown) => string): Frozen {
  return { hash: definitionHash(definition), text: JSON.stringify(snapshot), summary: null, describe };
}

/**
 * What publishing does once the snapshot is built, for either kind: the draft equal to the last
 * revision (an edit undone) is nothing to publish (`null`; the stale flag is cleared), else the
 * next revision is written with the given or generated summary and the parent marked published.
 */
export async function freeze(
  trx: Transaction<Database>,
  kind: RevisionKind,
  workspaceId: string,
  parentId: string,
  version: number,
  now: string,
  frozen: Frozen,
  extra: Record<string, unknown>,
  options: PublishOptions,
): Promise<RevisionView | null> {
  const t = TABLES[kind];
  const db = trx as Transaction<any>;
  const { hash, text } = frozen;
  const previous = version > 1
    ? ((await db.selectFrom(t.revisions).select(['id', 'definition_hash']).where(t.parentColumn, '=', parentId).where('version', '=', version - 1).executeTakeFirst()) as
        | { id: string; definition_hash: string }
        | undefined)
    : undefined;
  if (previous && previous.definition_hash === hash) {
    // Nothing to publish, but the draft is now marked as its last revision: a change of what it
    // answers, so its stamp (its ETag) moves too (`now` is later than the stamp it had).
    await db.updateTable(t.parents).set({ has_unpublished_changes: 0, updated_at: now }).where('id', '=', parentId).execute();
    return null;
  }
  let summary = options.changesSummary ?? frozen.summary;
  if (summary === null) {
    // The previous snapshot is read only to describe the difference.
    const before = previous
      ? ((await db.selectFrom(t.revisions).select('snapshot').where('id', '=', previous.id).executeTakeFirstOrThrow()) as { snapshot: string }).snapshot
      : null;
    summary = frozen.describe(before === null ? null : JSON.parse(before));
  }
  const id = newId();
  await chargeRevisionBytes(trx, workspaceId, Buffer.byteLength(text), options.budgetBytes ?? DEFAULT_REVISION_BYTES);
  await db
    .insertInto(t.revisions)
    .values({ id, [t.parentColumn]: parentId, version, published_at: now, published_by: options.keyId, changes_summary: summary, definition_hash: hash, snapshot: text, ...extra })
    .execute();
  await db.updateTable(t.parents).set({ status: 'published', current_version: version, has_unpublished_changes: 0, updated_at: now }).where('id', '=', parentId).execute();
  return toRevision(kind, { id, parent_id: parentId, version, published_at: now, published_by: options.keyId, changes_summary: summary });
}

/** The stamp (`updated_at`) of a form or document, read in `trx` (after a publish that found nothing to publish moved it). */
export async function parentStamp(trx: Transaction<Database>, kind: RevisionKind, parentId: string): Promise<string> {
  const row = (await (trx as Transaction<any>).selectFrom(TABLES[kind].parents).select('updated_at').where('id', '=', parentId).executeTakeFirstOrThrow()) as { updated_at: string };
  return row.updated_at;
}

// ---- reading ---------------------------------------------------------------------------------

export type RevisionKind = 'form' | 'document';

const TABLES = {
  form: { revisions: 'form_revisions', parents: 'forms', parentColumn: 'form_id', idKey: 'formId', label: 'Form' },
  document: { revisions: 'document_revisions', parents: 'documents', parentColumn: 'document_id', idKey: 'documentId', label: 'Document' },
} as const;

interface RevisionListRow {
  id: string;
  parent_id: string;
  version: number | string;
  published_at: string;
  published_by: string;
  changes_summary: string;
}

function toRevision(kind: RevisionKind, row: RevisionListRow): RevisionView {
  return {
    id: row.id,
    [TABLES[kind].idKey]: row.parent_id,
    version: Number(row.version),
    publishedAt: row.published_at,
    publishedBy: row.published_by,
    changesSummary: row.changes_summary,
  } as RevisionView;
}

async function assertParent(db: Kysely<Database>, kind: RevisionKind, workspaceId: string, parentId: string): Promise<void> {
  const t = TABLES[kind];
  const found = await db
    .selectFrom(t.parents)
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', parentId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!found) throw notFound(t.label);
}

/** Revisions of a live form or document of the workspace, newest first. */
export async function listRevisions(
  db: Kysely<Database>,
  kind: RevisionKind,
  workspaceId: string,
  parentId: string,
  page: Page,
): Promise<{ items: RevisionView[]; total: number }> {
  const t = TABLES[kind];
  await assertParent(db, kind, workspaceId, parentId);
  // Typed loosely: the two tables share these columns under a parent column of their own.
  const base = (db as Kysely<any>).selectFrom(t.revisions).where(t.parentColumn, '=', parentId);
  const [count, rows] = await Promise.all([
    base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow(),
    base
      .select(['id', `${t.parentColumn} as parent_id`, 'version', 'published_at', 'published_by', 'changes_summary'])
      .orderBy('version', 'desc')
      .limit(page.limit)
      .offset(page.offset)
      .execute(),
  ]);
  return { items: (rows as RevisionListRow[]).map((r) => toRevision(kind, r)), total: Number((count as { n: number | string }).n) };
}

/** A version as the path gives it: a positive whole number in range, or nothing (404). */
export function parseVersion(text: string): number | null {
  if (!/^[1-9][0-9]{0,9}$/.test(text)) return null;
  const version = Number(text);
  return version <= 2_147_483_647 ? version : null;
}

/**
 * One revision with its snapshot as stored (JSON text, served byte for byte), of a live form or
 * document of the workspace.
 */
/**
 * One revision, without its snapshot (`revisionSnapshot` reads it: a revision never changes, so
 * `GET …/revisions/{version}` keeps its answer by the revision's id), checking its parent is live
 * in the workspace.
 */
export async function findRevision(db: Kysely<Database>, kind: RevisionKind, workspaceId: string, parentId: string, version: number | null): Promise<RevisionView> {
  const t = TABLES[kind];
  // One statement when the revision is there (it is read often, and many at once); the parent is
  // looked up on its own only to say which of the two is missing.
  const row =
    version === null
      ? undefined
      : ((await (db as Kysely<any>)
          .selectFrom(`${t.revisions} as r`)
          .innerJoin(`${t.parents} as p`, 'p.id', `r.${t.parentColumn}`)
          .select(['r.id as id', `r.${t.parentColumn} as parent_id`, 'r.version as version', 'r.published_at as published_at', 'r.published_by as published_by', 'r.changes_summary as changes_summary'])
          .where(`r.${t.parentColumn}`, '=', parentId)
          .where('r.version', '=', version)
          .where('p.workspace_id', '=', workspaceId)
          .where('p.deleted_at', 'is', null)
          .executeTakeFirst()) as RevisionListRow | undefined);
  if (!row) {
    await assertParent(db, kind, workspaceId, parentId);
    throw notFound('Revision');
  }
  return toRevision(kind, row);
}

/** The snapshot of the revision of id `revisionId` as stored (JSON text); `undefined` when there is none. */
export async function revisionSnapshot(db: Kysely<Database>, kind: RevisionKind, revisionId: string): Promise<string | undefined> {
  const row = (await (db as Kysely<any>).selectFrom(TABLES[kind].revisions).select('snapshot').where('id', '=', revisionId).executeTakeFirst()) as { snapshot: string } | undefined;
  return row?.snapshot;
}

/**
 * The id of a form's revision (for the evaluation cache: revisions never change), checking the
 * form is live in the workspace; `snapshotOf` reads its snapshot.
 */
export async function findFormRevision(db: Kysely<Database>, workspaceId: string, formId: string, version: number | null): Promise<string> {
  await assertParent(db, 'form', workspaceId, formId);
  if (version === null) throw notFound('Revision');
  const row = await db.selectFrom('form_revisions').select('id').where('form_id', '=', formId).where('version', '=', version).executeTakeFirst();
  if (!row) throw notFound('Revision');
  return row.id;
}

/** The snapshot of a form revision and its size as text; `undefined` when it no longer exists. */
export async function formSnapshotOf<Snapshot>(db: Kysely<Database>, revisionId: string): Promise<{ value: Snapshot; bytes: number } | undefined> {
  const row = await db.selectFrom('form_revisions').select('snapshot').where('id', '=', revisionId).executeTakeFirst();
  return row ? { value: JSON.parse(row.snapshot) as Snapshot, bytes: row.snapshot.length } : undefined;
}

/** The snapshot of a form's revision `version`, as stored (JSON text); `undefined` when there is none. */
export async function formRevisionSnapshot(db: Kysely<Database>, formId: string, version: number): Promise<string | undefined> {
  const row = await db.selectFrom('form_revisions').select('snapshot').where('form_id', '=', formId).where('version', '=', version).executeTakeFirst();
  return row?.snapshot;
}
