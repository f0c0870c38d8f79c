import type { Kysely, Transaction } from 'kysely';
import { notFound } from '../domain/errors.js';
import type { Status } from '../domain/status.js';
import { liveDocuments, nextStamp } from './live.js';
import type { Page } from './page.js';
import type { Database, DocumentRow } from './schema.js';

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

/**
 * A document's row as the API shows it. `pageDimensions`, when given, stands in for the parsed
 * `page_dimensions` (a marker the caller replaces by the stored text: src/http/document-answer.ts).
 */
export function toDocument(row: DocumentRow, pageDimensions?: DocumentView['pageDimensions']): DocumentView {
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
    pageDimensions: pageDimensions ?? (JSON.parse(row.page_dimensions) as Array<{ width: number; height: number }>),
    pageSource: row.page_source,
    currentVersion: row.current_version === null ? null : Number(row.current_version),
    hasUnpublishedChanges: Boolean(row.has_unpublished_changes),
    originalUrl: `/api/v1/documents/${row.id}/file`,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export async function insertDocument(db: Kysely<Database>, row: DocumentRow): Promise<DocumentView> {
  await db.insertInto('documents').values(row).execute();
  return toDocument(row);
}

export async function getDocumentRow(db: Kysely<Database>, workspaceId: string, id: string): Promise<DocumentRow> {
  const row = await liveDocuments(db, workspaceId).selectAll().where('id', '=', id).executeTakeFirst();
  if (!row) throw notFound('Document');
  return row;
}

/** A live document by id alone, in whichever workspace: for a signed download URL, whose signature names the document. */
export async function getSignedDocumentRow(db: Kysely<Database>, id: string): Promise<DocumentRow> {
  const row = await db.selectFrom('documents').selectAll().where('id', '=', id).where('deleted_at', 'is', null).executeTakeFirst();
  if (!row) throw notFound('Document');
  return row;
}

export async function listDocuments(
  db: Kysely<Database>,
  workspaceId: string,
  filter: { status?: Status },
  page: Page,
): Promise<{ items: DocumentRow[]; total: number }> {
  let query = liveDocuments(db, workspaceId);
  if (filter.status) query = query.where('status', '=', filter.status);
  const [count, rows] = await Promise.all([
    query.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow(),
    query.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute(),
  ]);
  return { items: rows, total: Number(count.n) };
}

/** Writes `changes` to a document's row (locked by the caller). */
export async function updateDocumentRow(trx: Transaction<Database>, id: string, changes: Partial<DocumentRow>): Promise<void> {
  await trx.updateTable('documents').set(changes).where('id', '=', id).execute();
}

/**
 * Marks a document's draft changed (its row locked by the caller), moving its stamp forward
 * (`nextStamp`: later than the one it had, even within one millisecond), so that the stamp is the
 * draft's version: ETags, `If-Match` and the fields kept per stamp (src/services/read-document.ts) rely on it.
 */
export async function markDocumentChanged(trx: Transaction<Database>, row: Pick<DocumentRow, 'id' | 'updated_at'>, now: number): Promise<void> {
  await trx.updateTable('documents').set({ has_unpublished_changes: 1, updated_at: nextStamp(row.updated_at, now) }).where('id', '=', row.id).execute();
}

/** Hides a live document (soft delete); 404 when there is none. */
export async function softDeleteDocument(db: Kysely<Database>, workspaceId: string, id: string, now: string): Promise<void> {
  const result = await db
    .updateTable('documents')
    .set({ deleted_at: now })
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) === 0) throw notFound('Document');
}

/**
 * Removes a document's row for good (fields and revisions cascade); answers the content hashes
 * it and its revisions referred to. 404 when there is no such document.
 */
export async function deleteDocumentRows(trx: Transaction<Database>, workspaceId: string, id: string): Promise<string[]> {
  const kept = await trx.selectFrom('document_revisions').select(['sha256', 'rendition_sha256']).where('document_id', '=', id).execute();
  const rows = await trx
    .deleteFrom('documents')
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .returning(['sha256', 'rendition_sha256'])
    .execute();
  if (rows.length === 0) throw notFound('Document');
  return [...new Set([...rows, ...kept].flatMap((r) => [r.sha256, r.rendition_sha256]).filter((h): h is string => h !== null))];
}
