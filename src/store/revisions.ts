import { sql, type Kysely, type Transaction } from 'kysely';
import { AppError, notFound } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import {
  definitionHash,
  definitionTexts,
  diffDocuments,
  diffForms,
  formLists,
  summarize,
  type DocumentDefinition,
  type FormDefinition,
  type SnapshotItem,
} from '../domain/revisions.js';
import type { Store } from './db.js';
import { listFields, lockLiveDocument, toDocument, type DocumentView, type FieldView } from './documents.js';
import { loadContent, loadFormWithContent, type FormContent } from './form-content.js';
import { yieldToLoop } from '../domain/yield.js';
import { lockLiveForm, nextStamp, toForm, type Form, type Page } from './forms.js';
import type { Database, DocumentRow, FormRow } from './schema.js';
import { recordEvent } from '../webhooks/events.js';

export interface RevisionView {
  id: string;
  formId?: string;
  documentId?: string;
  version: number;
  publishedAt: string;
  publishedBy: string;
  changesSummary: string;
}

export type FormSnapshot = { form: Form } & FormContent;
export interface DocumentSnapshot {
  document: DocumentView;
  fields: FieldView[];
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

const noChanges = (kind: string) =>
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
const nextVersion = (row: { current_version: number | null }) => Number(row.current_version ?? 0) + 1;

/** The definition the diff and the hash read, from the objects of a form snapshot. */
function formDefinition(snapshot: FormSnapshot): FormDefinition {
  const { title, description, settings } = snapshot.form;
  const items = (list: unknown[]) => list as SnapshotItem[];
  return { form: { title, description, settings }, sections: items(snapshot.sections), questions: items(snapshot.questions), rules: items(snapshot.rules) };
}

function documentDefinition(snapshot: DocumentSnapshot): DocumentDefinition {
  return { document: { title: snapshot.document.title, sha256: snapshot.document.sha256 }, fields: snapshot.fields as unknown as SnapshotItem[] };
}

/** A snapshot ready to store: its JSON text, its definition's hash, and its summary. */
interface Frozen {
  hash: string;
  text: string;
  /** The summary when already known (the client's, or generated beforehand); else `describe` makes it. */
  summary: string | null;
  /** The generated summary, from the previous revision's snapshot (`null` for the first). */
  describe(previous: unknown): string;
}

/** `Frozen` for a snapshot built in the transaction. */
function frozenOf(snapshot: unknown, definition: FormDefinition | DocumentDefinition, describe: (previous: unknown) => string): Frozen {
  return { hash: definitionHash(definition), text: JSON.stringify(snapshot), summary: null, describe };
}

/**
 * What publishing does once the snapshot is built, for either kind: the draft equal to the last
 * revision (an edit undone) is nothing to publish (`null`; the stale flag is cleared), else the
 * next revision is written with the given or generated summary and the parent marked published.
 */
async function freeze(
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
    await db.updateTable(t.parents).set({ has_unpublished_changes: 0 }).where('id', '=', parentId).execute();
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

/**
 * Publishes the form whose row `row` the caller has locked in `trx`: freezes the draft into the
 * next revision and marks the form published. `null` when there is nothing to publish: the draft
 * equals the last revision, and its `has_unpublished_changes` is then 0 (cleared if it was set).
 */
export async function publishFormLocked(
  trx: Transaction<Database>,
  row: FormRow,
  options: PublishOptions,
  /** The publish worked out before the transaction, for exactly this row (the caller checked). */
  prepared?: PreparedPublish,
): Promise<{ form: Form; revision: RevisionView } | null> {
  if (row.current_version !== null && !row.has_unpublished_changes) return null;
  if (prepared) {
    const frozen = { hash: prepared.hash, text: prepared.text, summary: prepared.summary, describe: () => prepared.summary };
    const revision = await freeze(trx, 'form', row.workspace_id, row.id, prepared.version, prepared.now, frozen, {}, options);
    return published(trx, row.workspace_id, 'form_published', revision && { form: prepared.form, revision });
  }
  const content = await loadContent(trx, row.id);
  const version = nextVersion(row);
  const now = nextStamp(row.updated_at);
  const form = toForm({ ...row, status: 'published', current_version: version, has_unpublished_changes: 0, updated_at: now }, content.questions.length);
  const snapshot: FormSnapshot = { form, sections: content.sections, questions: content.questions, rules: content.rules };
  const definition = formDefinition(snapshot);
  const revision = await freeze(
    trx, 'form', row.workspace_id, row.id, version, now,
    frozenOf(snapshot, definition, (previous) => summarize(diffForms(previous === null ? null : formDefinition(previous as FormSnapshot), definition), previous === null)),
    {}, options,
  );
  return published(trx, row.workspace_id, 'form_published', revision && { form, revision });
}

/** Records the `…_published` event of a publish that happened (`result` not null), in its transaction. */
async function published<T extends { revision: RevisionView }>(trx: Transaction<Database>, workspaceId: string, type: 'form_published' | 'document_published', result: T | null): Promise<T | null> {
  if (result) await recordEvent(trx, workspaceId, type, result as unknown as Record<string, unknown>);
  return result;
}

/**
 * A form's publish worked out outside any transaction: its snapshot as JSON, the definition's
 * hash and the summary. For a large form this is most of the work of publishing (megabytes parsed,
 * hashed, diffed and serialised): done here, in short turns of the event loop, it holds no lock
 * and stalls no one; the transaction then only checks that the form is still as read (`baseStamp`,
 * `baseVersion`) and writes.
 */
export interface PreparedPublish {
  /** The form's `updated_at` and `current_version` it was worked out from. */
  baseStamp: string;
  baseVersion: number | null;
  /** The form's `updated_at` after `patch` (the stamp `updateForm` writes), and after publishing. */
  patchedStamp: string;
  now: string;
  version: number;
  form: Form;
  hash: string;
  text: string;
  /** The summary to store: the client's, or generated from the previous revision. */
  summary: string;
}

/** The form-level keys `PUT /forms/{id}` may change along with publishing. */
export interface FormAttributes {
  title?: string;
  description?: string | null;
  settings?: Record<string, unknown>;
}

/** The columns `attributes` change in `row` (none when they equal the row's). */
export function attributeChanges(row: FormRow, attributes: FormAttributes): Partial<FormRow> {
  const changes: Partial<FormRow> = {};
  if (attributes.title !== undefined && attributes.title !== row.title) changes.title = attributes.title;
  if (attributes.description !== undefined && attributes.description !== row.description) changes.description = attributes.description;
  if (attributes.settings !== undefined) {
    const settings = JSON.stringify(attributes.settings);
    if (settings !== row.settings) changes.settings = settings;
  }
  return changes;
}

/** `undefined` when the form is not there (live, of the workspace). */
export async function prepareFormPublish(
  store: Store,
  workspaceId: string,
  formId: string,
  attributes: FormAttributes,
  options: PublishOptions,
): Promise<PreparedPublish | undefined> {
  const found = await loadFormWithContent(store, workspaceId, formId);
  if (!found) return undefined;
  await yieldToLoop();
  const base = found.form;
  const changes = attributeChanges(base, attributes);
  const patchedStamp = Object.keys(changes).length > 0 ? nextStamp(base.updated_at) : base.updated_at;
  const version = nextVersion(base);
  const now = nextStamp(patchedStamp);
  const form = toForm({ ...base, ...changes, status: 'published', current_version: version, has_unpublished_changes: 0, updated_at: now }, found.questionCount);
  const snapshot: FormSnapshot = { form, ...found.content };
  const definition = formDefinition(snapshot);
  const define = await definitionTexts(formLists(definition), yieldToLoop);
  const hash = definitionHash(definition, define);
  await yieldToLoop();
  const text = JSON.stringify(snapshot);
  await yieldToLoop();
  let summary = options.changesSummary ?? null;
  if (summary === null) {
    // Revisions never change: the previous one can be read and diffed before the transaction.
    const previous = base.current_version === null
      ? undefined
      : await store.db.selectFrom('form_revisions').select('snapshot').where('form_id', '=', formId).where('version', '=', Number(base.current_version)).executeTakeFirst();
    await yieldToLoop();
    const before = previous ? formDefinition(JSON.parse(previous.snapshot) as FormSnapshot) : null;
    await yieldToLoop();
    const defineBoth = before ? await definitionTexts(formLists(before), yieldToLoop, define) : define;
    summary = summarize(diffForms(before, definition, defineBoth), before === null);
    await yieldToLoop();
  }
  const baseVersion = base.current_version === null ? null : Number(base.current_version);
  return { baseStamp: base.updated_at, baseVersion, patchedStamp, now, version, form, hash, text, summary };
}

/** Whether `row` (locked) is still the form `prepared` was worked out from. */
export function stillPrepared(row: FormRow, prepared: PreparedPublish | undefined): prepared is PreparedPublish {
  return prepared !== undefined && row.updated_at === prepared.baseStamp && (row.current_version === null ? null : Number(row.current_version)) === prepared.baseVersion;
}

/** `POST /forms/{id}/publish`: `409 no_changes` when there is nothing to publish. */
export async function publishForm(
  store: Store,
  workspaceId: string,
  formId: string,
  options: PublishOptions,
): Promise<{ form: Form; revision: RevisionView }> {
  // The heavy part first, outside the transaction; in it, used only if the form is still as read
  // (else worked out again there, as a concurrent change requires). The transaction commits
  // before `no_changes` is thrown: clearing a stale flag is kept.
  const prepared = await prepareFormPublish(store, workspaceId, formId, {}, options);
  const published = await withVersionRetry(() =>
    store.db.transaction().execute(async (trx) => {
      const row = await lockLiveForm(trx, store.dialect, workspaceId, formId);
      if (row.status === 'archived') throw new AppError('form_not_editable', 'This form is archived and read only; it cannot be published again. Its revisions stay readable.');
      return publishFormLocked(trx, row, options, stillPrepared(row, prepared) ? prepared : undefined);
    }),
  );
  if (!published) throw noChanges('form');
  return published;
}

/** As `publishFormLocked`, for a document whose row the caller has locked; the revision keeps its files. */
export async function publishDocumentLocked(
  trx: Transaction<Database>,
  row: DocumentRow,
  options: PublishOptions,
): Promise<{ document: DocumentView; revision: RevisionView } | null> {
  if (row.current_version !== null && !row.has_unpublished_changes) return null;
  const fields = await listFields(trx, row.id);
  const version = nextVersion(row);
  const now = new Date().toISOString();
  const document = toDocument({ ...row, status: 'published', current_version: version, has_unpublished_changes: 0, updated_at: now });
  const snapshot: DocumentSnapshot = { document, fields };
  const definition = documentDefinition(snapshot);
  const revision = await freeze(
    trx, 'document', row.workspace_id, row.id, version, now,
    frozenOf(snapshot, definition, (previous) => summarize(diffDocuments(previous === null ? null : documentDefinition(previous as DocumentSnapshot), definition), previous === null)),
    { sha256: row.sha256, rendition_sha256: row.rendition_sha256 }, options,
  );
  return published(trx, row.workspace_id, 'document_published', revision && { document, revision });
}

/** `POST /documents/{id}/publish`: `409 no_changes` when there is nothing to publish. */
export async function publishDocument(
  store: Store,
  workspaceId: string,
  documentId: string,
  options: PublishOptions,
): Promise<{ document: DocumentView; revision: RevisionView }> {
  const published = await withVersionRetry(() =>
    store.db.transaction().execute(async (trx) => {
      const row = await lockLiveDocument(trx, store.dialect, workspaceId, documentId);
      if (row.status === 'archived') throw new AppError('document_not_editable', 'This document is archived and read only; it cannot be published again. Its revisions stay readable.');
      return publishDocumentLocked(trx, row, options);
    }),
  );
  if (!published) throw noChanges('document');
  return published;
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
export async function getRevision(
  db: Kysely<Database>,
  kind: RevisionKind,
  workspaceId: string,
  parentId: string,
  version: number | null,
): Promise<{ revision: RevisionView; snapshot: string }> {
  const t = TABLES[kind];
  await assertParent(db, kind, workspaceId, parentId);
  if (version === null) throw notFound('Revision');
  const row = (await (db as Kysely<any>)
    .selectFrom(t.revisions)
    .select(['id', `${t.parentColumn} as parent_id`, 'version', 'published_at', 'published_by', 'changes_summary', 'snapshot'])
    .where(t.parentColumn, '=', parentId)
    .where('version', '=', version)
    .executeTakeFirst()) as (RevisionListRow & { snapshot: string }) | undefined;
  if (!row) throw notFound('Revision');
  return { revision: toRevision(kind, row), snapshot: row.snapshot };
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
export async function formSnapshotOf(db: Kysely<Database>, revisionId: string): Promise<{ value: FormSnapshot; bytes: number } | undefined> {
  const row = await db.selectFrom('form_revisions').select('snapshot').where('id', '=', revisionId).executeTakeFirst();
  return row ? { value: JSON.parse(row.snapshot) as FormSnapshot, bytes: row.snapshot.length } : undefined;
}
