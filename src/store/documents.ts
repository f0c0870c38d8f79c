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
 * A document's row without its page sizes, which a document of 10,000 pages holds 260 KB of: what a
 * list reads first (its page sizes are read after, a few documents at a time: src/http/document-answer.ts).
 */
export type DocumentHead = Omit<DocumentRow, 'page_dimensions'>;

const HEAD_COLUMNS = [
  'id',
  'workspace_id',
  'title',
  'status',
  'original_filename',
  'file_type',
  'mime_type',
  'size_bytes',
  'sha256',
  'rendition_sha256',
  'page_source',
  'page_count',
  'current_version',
  'has_unpublished_changes',
  'deleted_at',
  'created_at',
  'updated_at',
] as const satisfies ReadonlyArray<keyof DocumentHead>;
// Every column but the page sizes: the build fails when a column is added to the row and not here.
const everyHeadColumn: Record<Exclude<keyof DocumentHead, (typeof HEAD_COLUMNS)[number]>, never> = {};
void everyHeadColumn;

/**
 * A document's row as the API shows it. `pageDimensions`, when given, stands in for the parsed
 * `page_dimensions` (a marker the caller replaces by the stored text: src/http/document-answer.ts).
 */
export function toDocument(row: DocumentRow): DocumentView;
export function toDocument(row: DocumentHead, pageDimensions: DocumentView['pageDimensions']): DocumentView;
export function toDocument(row: DocumentHead & { page_dimensions?: string }, pageDimensions?: DocumentView['pageDimensions']): DocumentView {
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
    pageDimensions: pageDimensions ?? (JSON.parse(row.page_dimensions!) as Array<{ width: number; height: number }>),
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

/** A page of the workspace's live documents, newest first, as heads (without their page sizes: `readPageDimensions`). */
export async function listDocuments(
  db: Kysely<Database>,
  workspaceId: string,
  filter: { status?: Status },
  page: Page,
): Promise<{ items: DocumentHead[]; total: number }> {
  let query = liveDocuments(db, workspaceId);
  if (filter.status) query = query.where('status', '=', filter.status);
  const [count, rows] = await Promise.all([
    query.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow(),
    query.select(HEAD_COLUMNS).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute(),
  ]);
  return { items: rows, total: Number(count.n) };
}

/**
 * The stored page sizes (JSON text) of the workspace's documents `ids`, by id. A document deleted
 * since its head was read is still here; one deleted for good is not.
 */
export async function readPageDimensions(db: Kysely<Database>, workspaceId: string, ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await db.selectFrom('documents').select(['id', 'page_dimensions']).where('workspace_id', '=', workspaceId).where('id', 'in', ids).execute();
  return new Map(rows.map((row) => [row.id, row.page_dimensions]));
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
