import type { Kysely, Transaction } from 'kysely';
import { AppError, notFound } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import {
  definitionHash,
  diffDocuments,
  diffForms,
  summarize,
  type DocumentDefinition,
  type FormDefinition,
  type SnapshotItem,
} from '../domain/revisions.js';
import type { Store } from './db.js';
import { listFields, lockLiveDocument, toDocument, type DocumentView, type FieldView } from './documents.js';
import { loadContent, type FormContent } from './form-content.js';
import { lockLiveForm, toForm, type Form, type Page } from './forms.js';
import type { Database, DocumentRow, FormRow } from './schema.js';

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

/**
 * What publishing does once the snapshot is built, for either kind: the draft equal to the last
 * revision (an edit undone) is nothing to publish (`null`; the stale flag is cleared), else the
 * next revision is written with the given or generated summary and the parent marked published.
 */
async function freeze(
  trx: Transaction<Database>,
  kind: RevisionKind,
  parentId: string,
  version: number,
  now: string,
  snapshot: unknown,
  definition: FormDefinition | DocumentDefinition,
  /** The generated summary, from the previous revision's snapshot (`null` for the first). */
  describe: (previous: unknown) => string,
  extra: Record<string, unknown>,
  options: PublishOptions,
): Promise<RevisionView | null> {
  const t = TABLES[kind];
  const db = trx as Transaction<any>;
  const hash = definitionHash(definition);
  const previous = version > 1
    ? ((await db.selectFrom(t.revisions).select(['id', 'definition_hash']).where(t.parentColumn, '=', parentId).where('version', '=', version - 1).executeTakeFirst()) as
        | { id: string; definition_hash: string }
        | undefined)
    : undefined;
  if (previous && previous.definition_hash === hash) {
    await db.updateTable(t.parents).set({ has_unpublished_changes: 0 }).where('id', '=', parentId).execute();
    return null;
  }
  let summary = options.changesSummary ?? null;
  if (summary === null) {
    // The previous snapshot is read only to describe the difference.
    const before = previous
      ? ((await db.selectFrom(t.revisions).select('snapshot').where('id', '=', previous.id).executeTakeFirstOrThrow()) as { snapshot: string }).snapshot
      : null;
    summary = describe(before === null ? null : JSON.parse(before));
  }
  const id = newId();
  await db
    .insertInto(t.revisions)
    .values({ id, [t.parentColumn]: parentId, version, published_at: now, published_by: options.keyId, changes_summary: summary, definition_hash: hash, snapshot: JSON.stringify(snapshot), ...extra })
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
): Promise<{ form: Form; revision: RevisionView } | null> {
  if (row.current_version !== null && !row.has_unpublished_changes) return null;
  const content = await loadContent(trx, row.id);
  const version = nextVersion(row);
  const now = new Date().toISOString();
  const form = toForm({ ...row, status: 'published', current_version: version, has_unpublished_changes: 0, updated_at: now }, content.questions.length);
  const snapshot: FormSnapshot = { form, sections: content.sections, questions: content.questions, rules: content.rules };
  const definition = formDefinition(snapshot);
  const revision = await freeze(
    trx, 'form', row.id, version, now, snapshot, definition,
    (previous) => summarize(diffForms(previous === null ? null : formDefinition(previous as FormSnapshot), definition), previous === null),
    {}, options,
  );
  return revision && { form, revision };
}

/** `POST /forms/{id}/publish`: `409 no_changes` when there is nothing to publish. */
export async function publishForm(
  store: Store,
  workspaceId: string,
  formId: string,
  options: PublishOptions,
): Promise<{ form: Form; revision: RevisionView }> {
  // The transaction commits before `no_changes` is thrown: clearing a stale flag is kept.
  const published = await withVersionRetry(() =>
    store.db.transaction().execute(async (trx) => {
      const row = await lockLiveForm(trx, store.dialect, workspaceId, formId);
      if (row.status === 'archived') throw new AppError('form_not_editable', 'This form is archived and read only; it cannot be published again. Its revisions stay readable.');
      return publishFormLocked(trx, row, options);
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
    trx, 'document', row.id, version, now, snapshot, definition,
    (previous) => summarize(diffDocuments(previous === null ? null : documentDefinition(previous as DocumentSnapshot), definition), previous === null),
    { sha256: row.sha256, rendition_sha256: row.rendition_sha256 }, options,
  );
  return revision && { document, revision };
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
