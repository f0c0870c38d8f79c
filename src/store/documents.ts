import type { Kysely, Transaction } from 'kysely';
import { AppError, notFound } from '../domain/errors.js';
import type { Direction, FieldSpec, FieldType } from '../domain/fields.js';
import { assertForwardTransition, type Status } from '../domain/status.js';
import type { Dialect, Store } from './db.js';
import type { Page } from './forms.js';
import type { Database, DocumentFieldRow, DocumentRow } from './schema.js';
import { publishDocumentLocked, releaseRevisionBytes, withVersionRetry, type PublishOptions } from './revisions.js';
import { forUpdate } from './tx.js';
import { recordEvent } from '../webhooks/events.js';

export interface DocumentView {
  id: string;
  workspaceId: string;
  title: string;
  status: Status;
  originalFilename: string;
  fileType: 'pdf' | 'docx';
  sizeBytes: number;
  sha256: string;
  pageCount: number;
  pageDimensions: Array<{ width: number; height: number }>;
  pageSource: string;
  currentVersion: number | null;
  hasUnpublishedChanges: boolean;
  originalUrl: string;
  createdAt: string;
  updatedAt: string;
}

export interface FieldView extends FieldSpec {
  id: string;
  documentId: string;
  order: number;
  createdAt: string;
  updatedAt: string;
}

export function toDocument(row: DocumentRow): DocumentView {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    title: row.title,
    status: row.status as Status,
    originalFilename: row.original_filename,
    fileType: row.file_type as 'pdf' | 'docx',
    sizeBytes: Number(row.size_bytes),
    sha256: row.sha256,
    pageCount: Number(row.page_count),
    pageDimensions: JSON.parse(row.page_dimensions) as Array<{ width: number; height: number }>,
    pageSource: row.page_source,
    currentVersion: row.current_version === null ? null : Number(row.current_version),
    hasUnpublishedChanges: Boolean(row.has_unpublished_changes),
    originalUrl: `/api/v1/documents/${row.id}/file`,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function toField(row: DocumentFieldRow): FieldView {
  return {
    id: row.id,
    documentId: row.document_id,
    label: row.label,
    type: row.type as FieldType,
    pageNumber: Number(row.page_number),
    x: Number(row.x),
    y: Number(row.y),
    width: Number(row.width),
    height: Number(row.height),
    isRequired: Boolean(row.is_required),
    isReadOnly: Boolean(row.is_read_only),
    assigneeRole: row.assignee_role,
    defaultValue: row.default_value,
    direction: row.direction as Direction,
    options: JSON.parse(row.options) as FieldSpec['options'],
    order: Number(row.position),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function liveDocuments(db: Kysely<Database>, workspaceId: string) {
  return db.selectFrom('documents').where('workspace_id', '=', workspaceId).where('deleted_at', 'is', null);
}

/** The live document's row, locked for the rest of the transaction (404 when it is not there). */
export async function lockLiveDocument(trx: Transaction<Database>, dialect: Dialect, workspaceId: string, id: string): Promise<DocumentRow> {
  const row = await forUpdate(liveDocuments(trx, workspaceId).selectAll().where('id', '=', id), dialect).executeTakeFirst();
  if (!row) throw notFound('Document');
  return row;
}

export async function insertDocument(db: Kysely<Database>, row: DocumentRow): Promise<DocumentView> {
  await db.insertInto('documents').values(row).execute();
  const document = toDocument(row);
  await recordEvent(db, row.workspace_id, 'document_created', { document });
  return document;
}

/** A document's `document_updated` event, in the transaction that changed it (read there when someone listens). */
export async function documentUpdated(trx: Kysely<Database>, workspaceId: string, id: string): Promise<void> {
  await recordEvent(trx, workspaceId, 'document_updated', async () => ({
    document: toDocument(await trx.selectFrom('documents').selectAll().where('id', '=', id).executeTakeFirstOrThrow()),
  }));
}

export async function getDocumentRow(db: Kysely<Database>, workspaceId: string, id: string): Promise<DocumentRow> {
  const row = await liveDocuments(db, workspaceId).selectAll().where('id', '=', id).executeTakeFirst();
  if (!row) throw notFound('Document');
  return row;
}

export async function listFields(db: Kysely<Database>, documentId: string): Promise<FieldView[]> {
  const rows = await db.selectFrom('document_fields').selectAll().where('document_id', '=', documentId).orderBy('position').execute();
  return rows.map(toField);
}

export async function listDocuments(
  db: Kysely<Database>,
  workspaceId: string,
  filter: { status?: Status },
  page: Page,
): Promise<{ items: DocumentView[]; total: number }> {
  let query = liveDocuments(db, workspaceId);
  if (filter.status) query = query.where('status', '=', filter.status);
  const [count, rows] = await Promise.all([
    query.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow(),
    query.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute(),
  ]);
  return { items: rows.map(toDocument), total: Number(count.n) };
}

/** As `updateForm`: `status: "published"` publishes unless there is nothing to publish. */
export async function updateDocument(
  store: Store,
  workspaceId: string,
  id: string,
  patch: { title?: string; status?: Status },
  publishing: PublishOptions,
): Promise<DocumentView> {
  return withVersionRetry(() => store.db.transaction().execute(async (trx) => {
    const row = await lockLiveDocument(trx, store.dialect, workspaceId, id);
    const current = row.status as Status;
    if (patch.status !== undefined) assertForwardTransition('document', current, patch.status);
    if (current === 'archived' && patch.title !== undefined) {
      throw new AppError('document_not_editable', 'This document is archived and read only.');
    }
    const changes: Partial<DocumentRow> = {};
    if (patch.title !== undefined && patch.title !== row.title) {
      changes.title = patch.title;
      changes.has_unpublished_changes = 1;
    }
    // Publishing sets the status itself, with the revision.
    if (patch.status !== undefined && patch.status !== current && patch.status !== 'published') changes.status = patch.status;
    let updated = row;
    if (Object.keys(changes).length > 0) {
      changes.updated_at = new Date().toISOString();
      await trx.updateTable('documents').set(changes).where('id', '=', id).execute();
      updated = { ...row, ...changes };
      await documentUpdated(trx, workspaceId, id);
    }
    if (patch.status === 'published') {
      const published = await publishDocumentLocked(trx, updated, publishing);
      if (published) return published.document;
      // Nothing to publish: the draft equals its last revision (and is marked so now).
      updated = { ...updated, has_unpublished_changes: 0 };
    }
    return toDocument(updated);
  }));
}

/**
 * Soft delete hides the document; permanent delete removes its rows (fields go with them) and
 * answers the content hashes it referred to, for the caller to remove the blobs no other row
 * still uses (see `removeUnreferencedBlobs`).
 */
export async function deleteDocument(db: Kysely<Database>, workspaceId: string, id: string, permanent: boolean): Promise<string[]> {
  if (!permanent) {
    return db.transaction().execute(async (trx) => {
      const result = await trx
        .updateTable('documents')
        .set({ deleted_at: new Date().toISOString() })
        .where('workspace_id', '=', workspaceId)
        .where('id', '=', id)
        .where('deleted_at', 'is', null)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) === 0) throw notFound('Document');
      await recordEvent(trx, workspaceId, 'document_deleted', { id });
      return [];
    });
  }
  return db.transaction().execute(async (trx) => {
    // The files its revisions keep go with them (the rows cascade); today they are the document's
    // own. Their snapshots' bytes go back to the workspace's budget.
    const kept = await trx.selectFrom('document_revisions').select(['sha256', 'rendition_sha256']).where('document_id', '=', id).execute();
    await releaseRevisionBytes(trx, 'document', workspaceId, id);
    const rows = await trx
      .deleteFrom('documents')
      .where('workspace_id', '=', workspaceId)
      .where('id', '=', id)
      .returning(['sha256', 'rendition_sha256', 'deleted_at'])
      .execute();
    if (rows.length === 0) throw notFound('Document');
    // A document soft-deleted before was announced then.
    if (rows[0]!.deleted_at === null) await recordEvent(trx, workspaceId, 'document_deleted', { id });
    return [...new Set([...rows, ...kept].flatMap((r) => [r.sha256, r.rendition_sha256]).filter((h): h is string => h !== null))];
  });
}

/** The hashes among `hashes` that no document and no document revision refers to any more. */
export async function unreferenced(db: Kysely<Database>, hashes: string[]): Promise<string[]> {
  if (hashes.length === 0) return [];
  const inUse = new Set<string | null>();
  for (const table of ['documents', 'document_revisions'] as const) {
    const used = await db
      .selectFrom(table)
      .select(['sha256', 'rendition_sha256'])
      .where((eb) => eb.or([eb('sha256', 'in', hashes), eb('rendition_sha256', 'in', hashes)]))
      .execute();
    for (const r of used) inUse.add(r.sha256).add(r.rendition_sha256);
  }
  return hashes.filter((h) => !inUse.has(h));
}

/** Every blob hash a row refers to: documents and the revisions that keep files (for the start-up sweep). */
export async function referencedBlobs(db: Kysely<Database>): Promise<Set<string>> {
  const referenced = new Set<string>();
  for (const table of ['documents', 'document_revisions'] as const) {
    const rows = await db.selectFrom(table).select(['sha256', 'rendition_sha256']).execute();
    for (const r of rows) {
      referenced.add(r.sha256);
      if (r.rendition_sha256 !== null) referenced.add(r.rendition_sha256);
    }
  }
  return referenced;
}
