import type { Kysely, Transaction } from 'kysely';
import { notFound } from '../domain/errors.js';
import { defaultLabel, type Direction, type FieldSpec, type FieldType } from '../domain/fields.js';
import { liveDocuments } from './live.js';
import { countSiblings, type Siblings } from './ordering.js';
import type { Database, DocumentFieldRow } from './schema.js';

export interface FieldView extends FieldSpec {
  id: string;
  documentId: string;
  order: number;
  createdAt: string;
  updatedAt: string;
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

export async function listFields(db: Kysely<Database>, documentId: string): Promise<FieldView[]> {
  const rows = await db.selectFrom('document_fields').selectAll().where('document_id', '=', documentId).orderBy('position').execute();
  return rows.map(toField);
}

/** A field as a client sends it: the type and the box are required, the rest has defaults. */
export type FieldInput = Pick<FieldSpec, 'type' | 'pageNumber' | 'x' | 'y' | 'width' | 'height'> &
  Partial<Omit<FieldSpec, 'type' | 'pageNumber' | 'x' | 'y' | 'width' | 'height'>> & { order?: number };

export type FieldPatch = Partial<FieldSpec> & { order?: number };

export function fieldSiblings(documentId: string): Siblings {
  return { table: 'document_fields', parentColumn: 'document_id', parentId: documentId };
}

/** The definition part of a stored field, keys in the order `withDefaults` writes them. */
export function specOf(field: FieldView): FieldSpec {
  const { label, type, pageNumber, x, y, width, height, isRequired, isReadOnly, assigneeRole, defaultValue, direction, options } = field;
  return { label, type, pageNumber, x, y, width, height, isRequired, isReadOnly, assigneeRole, defaultValue, direction, options };
}

export function withDefaults(input: FieldInput): FieldSpec {
  return {
    label: input.label ?? defaultLabel(input.type),
    type: input.type,
    pageNumber: input.pageNumber,
    x: input.x,
    y: input.y,
    width: input.width,
    height: input.height,
    isRequired: input.isRequired ?? false,
    isReadOnly: input.isReadOnly ?? false,
    assigneeRole: input.assigneeRole ?? null,
    defaultValue: input.defaultValue ?? null,
    direction: input.direction ?? 'auto',
    options: input.options ?? {},
  };
}

export function toFieldRow(id: string, documentId: string, spec: FieldSpec, position: number, createdAt: string, updatedAt: string): DocumentFieldRow {
  return {
    id,
    document_id: documentId,
    label: spec.label,
    type: spec.type,
    page_number: spec.pageNumber,
    x: spec.x,
    y: spec.y,
    width: spec.width,
    height: spec.height,
    is_required: spec.isRequired ? 1 : 0,
    is_read_only: spec.isReadOnly ? 1 : 0,
    assignee_role: spec.assigneeRole,
    default_value: spec.defaultValue,
    direction: spec.direction,
    options: JSON.stringify(spec.options),
    position,
    created_at: createdAt,
    updated_at: updatedAt,
  };
}

/** One page of a document's fields in order, and how many it has. */
export async function listDocumentFields(
  db: Kysely<Database>,
  workspaceId: string,
  documentId: string,
  page: { offset: number; limit: number },
): Promise<{ items: FieldView[]; total: number }> {
  const document = await liveDocuments(db, workspaceId).select('id').where('id', '=', documentId).executeTakeFirst();
  if (!document) throw notFound('Document');
  const [total, rows] = await Promise.all([
    countSiblings(db, fieldSiblings(documentId)),
    db.selectFrom('document_fields').selectAll().where('document_id', '=', documentId).orderBy('position').limit(page.limit).offset(page.offset).execute(),
  ]);
  return { items: rows.map(toField), total };
}

/** Inserts field rows (in batches of 100). */
export async function insertFieldRows(trx: Transaction<Database>, rows: DocumentFieldRow[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 100) await trx.insertInto('document_fields').values(rows.slice(i, i + 100)).execute();
}

/** A field of a document (404 when there is none). */
export async function getFieldRow(db: Kysely<Database>, documentId: string, fieldId: string): Promise<DocumentFieldRow> {
  const row = await db.selectFrom('document_fields').selectAll().where('document_id', '=', documentId).where('id', '=', fieldId).executeTakeFirst();
  if (!row) throw notFound('Field');
  return row;
}

export async function updateFieldRow(trx: Transaction<Database>, row: DocumentFieldRow): Promise<void> {
  await trx.updateTable('document_fields').set(row).where('id', '=', row.id).execute();
}

export async function deleteFieldRow(trx: Transaction<Database>, fieldId: string): Promise<void> {
  await trx.deleteFrom('document_fields').where('id', '=', fieldId).execute();
}

/** Deletes every field of a document; answers their ids. */
export async function deleteAllFields(trx: Transaction<Database>, documentId: string): Promise<string[]> {
  const gone = await trx.deleteFrom('document_fields').where('document_id', '=', documentId).returning('id').execute();
  return gone.map((r) => r.id);
}

/** The definitions of a document's fields. */
export async function fieldSpecs(db: Kysely<Database>, documentId: string): Promise<FieldSpec[]> {
  return (await db.selectFrom('document_fields').selectAll().where('document_id', '=', documentId).execute()).map((row) => specOf(toField(row)));
}
