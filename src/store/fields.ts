import type { Kysely, Transaction } from 'kysely';
import { iou } from '../detect/geometry.js';
import { AppError, invalid, notFound } from '../domain/errors.js';
import { defaultLabel, MAX_FIELDS_PER_DOCUMENT, validateField, type FieldSpec } from '../domain/fields.js';
import { newId } from '../domain/ids.js';
import type { Store } from './db.js';
import { documentUpdated, liveDocuments, lockLiveDocument, toField, type FieldView } from './documents.js';
import { clampPosition, closeGap, countSiblings, openGap, shiftBetween, type Siblings } from './ordering.js';
import type { Database, DocumentFieldRow, DocumentRow } from './schema.js';

/** A field as a client sends it: the type and the box are required, the rest has defaults. */
export type FieldInput = Pick<FieldSpec, 'type' | 'pageNumber' | 'x' | 'y' | 'width' | 'height'> &
  Partial<Omit<FieldSpec, 'type' | 'pageNumber' | 'x' | 'y' | 'width' | 'height'>> & { order?: number };

export type FieldPatch = Partial<FieldSpec> & { order?: number };

function siblings(documentId: string): Siblings {
  return { table: 'document_fields', parentColumn: 'document_id', parentId: documentId };
}

/** The definition part of a stored field, keys in the order `withDefaults` writes them. */
function specOf(field: FieldView): FieldSpec {
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

function toRow(id: string, documentId: string, spec: FieldSpec, position: number, createdAt: string, updatedAt: string): DocumentFieldRow {
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

/**
 * Runs `work` in a transaction holding the document's row lock, after checking that the document
 * exists in the workspace and is not archived; marks the draft changed afterwards, unless `work`
 * answers `{ changed: false }`.
 */
async function editDocument<T>(
  store: Store,
  workspaceId: string,
  documentId: string,
  work: (trx: Transaction<Database>, document: DocumentRow) => Promise<T>,
): Promise<T> {
  return store.db.transaction().execute(async (trx) => {
    const document = await lockLiveDocument(trx, store.dialect, workspaceId, documentId);
    if (document.status === 'archived') throw new AppError('document_not_editable', 'This document is archived and read only: its fields cannot change.');
    const result = await work(trx, document);
    const unchanged = typeof result === 'object' && result !== null && (result as { changed?: boolean }).changed === false;
    if (!unchanged) {
      await trx
        .updateTable('documents')
        .set({ has_unpublished_changes: 1, updated_at: new Date().toISOString() })
        .where('id', '=', documentId)
        .execute();
      await documentUpdated(trx, workspaceId, documentId);
    }
    return result;
  });
}

/**
 * Creates fields, all or none. With one input its `order` places it (the others shift); a bulk
 * create appends in the order given. `pathOf(i)` names an item in hints (`fields[3].`).
 */
export async function createFields(
  store: Store,
  workspaceId: string,
  documentId: string,
  inputs: FieldInput[],
  pathOf: (i: number) => string = () => '',
): Promise<FieldView[]> {
  return editDocument(store, workspaceId, documentId, async (trx, document) => {
    const specs = inputs.map((input, i) => {
      const spec = withDefaults(input);
      validateField(spec, Number(document.page_count), pathOf(i));
      return spec;
    });
    const count = await countSiblings(trx, siblings(documentId));
    if (count + inputs.length > MAX_FIELDS_PER_DOCUMENT) {
      throw invalid(inputs.length > 1 ? 'fields' : '', `a document holds at most ${MAX_FIELDS_PER_DOCUMENT} fields; it has ${count}`);
    }
    let position = inputs.length === 1 ? clampPosition(inputs[0]!.order, count) : count;
    if (position < count) await openGap(trx, siblings(documentId), position);
    const now = new Date().toISOString();
    const rows = specs.map((spec) => toRow(newId(), documentId, spec, position++, now, now));
    for (let i = 0; i < rows.length; i += 100) await trx.insertInto('document_fields').values(rows.slice(i, i + 100)).execute();
    return rows.map(toField);
  });
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
    countSiblings(db, siblings(documentId)),
    db.selectFrom('document_fields').selectAll().where('document_id', '=', documentId).orderBy('position').limit(page.limit).offset(page.offset).execute(),
  ]);
  return { items: rows.map(toField), total };
}

export async function updateField(store: Store, workspaceId: string, documentId: string, fieldId: string, patch: FieldPatch): Promise<FieldView> {
  return editDocument(store, workspaceId, documentId, async (trx, document) => {
    const row = await trx.selectFrom('document_fields').selectAll().where('document_id', '=', documentId).where('id', '=', fieldId).executeTakeFirst();
    if (!row) throw notFound('Field');
    const current = toField(row);
    const { order, ...changes } = patch;
    const merged: FieldSpec = { ...specOf(current), ...changes, options: changes.options ?? current.options };
    // Checked whole: a change of type away from a choice type must also send `options` without choices.
    validateField(merged, Number(document.page_count));
    let position = current.order;
    if (order !== undefined) {
      const count = await countSiblings(trx, siblings(documentId));
      position = Math.min(clampPosition(order, count), count - 1);
    }
    if (position === current.order && JSON.stringify(merged) === JSON.stringify(specOf(current))) {
      return { field: current, changed: false };
    }
    await shiftBetween(trx, siblings(documentId), current.order, position);
    const updated = toRow(row.id, documentId, merged, position, row.created_at, new Date().toISOString());
    await trx.updateTable('document_fields').set(updated).where('id', '=', fieldId).execute();
    return { field: toField(updated), changed: true };
  }).then((result) => result.field);
}

export async function deleteField(store: Store, workspaceId: string, documentId: string, fieldId: string): Promise<void> {
  await editDocument(store, workspaceId, documentId, async (trx) => {
    const row = await trx.selectFrom('document_fields').select(['position']).where('document_id', '=', documentId).where('id', '=', fieldId).executeTakeFirst();
    if (!row) throw notFound('Field');
    await trx.deleteFrom('document_fields').where('id', '=', fieldId).execute();
    await closeGap(trx, siblings(documentId), Number(row.position));
  });
}

/** A detected box as the fields it may become (parse jobs). */
export interface Candidate {
  spec: FieldSpec;
  confidence: number;
}

/**
 * Adds detected fields to the draft of a document whose row the caller has locked in `trx`
 * (applying a parse job): with `replaceExisting` every field of the draft goes first; otherwise a
 * candidate whose box overlaps a field already on its page (IoU ≥ 0.5) is skipped. Candidates
 * under `minConfidence`, or that are not valid fields of this document, are skipped too, and so is
 * everything past the fields limit. New fields go after the existing ones, in the order given.
 */
export async function applyCandidates(
  trx: Transaction<Database>,
  document: DocumentRow,
  candidates: readonly Candidate[],
  options: { minConfidence: number; replaceExisting: boolean },
): Promise<{ createdFieldIds: string[]; deletedFieldIds: string[] }> {
  let deletedFieldIds: string[] = [];
  if (options.replaceExisting) {
    const gone = await trx.deleteFrom('document_fields').where('document_id', '=', document.id).returning('id').execute();
    deletedFieldIds = gone.map((r) => r.id);
  }
  const existing = (await trx.selectFrom('document_fields').selectAll().where('document_id', '=', document.id).execute()).map((row) => specOf(toField(row)));
  const pageCount = Number(document.page_count);
  let position = existing.length;
  const now = new Date().toISOString();
  const rows: DocumentFieldRow[] = [];
  for (const { spec, confidence } of candidates) {
    if (position >= MAX_FIELDS_PER_DOCUMENT) break;
    if (confidence < options.minConfidence) continue;
    try {
      validateField(spec, pageCount);
    } catch {
      continue;
    }
    if (existing.some((e) => e.pageNumber === spec.pageNumber && iou(e, spec) >= 0.5)) continue;
    rows.push(toRow(newId(), document.id, spec, position++, now, now));
  }
  for (let i = 0; i < rows.length; i += 100) await trx.insertInto('document_fields').values(rows.slice(i, i + 100)).execute();
  if (rows.length > 0 || deletedFieldIds.length > 0) {
    await trx.updateTable('documents').set({ has_unpublished_changes: 1, updated_at: now }).where('id', '=', document.id).execute();
    await documentUpdated(trx, document.workspace_id, document.id);
  }
  return { createdFieldIds: rows.map((r) => r.id), deletedFieldIds };
}
