import type { Transaction } from 'kysely';
import { iou } from '../../detect/geometry.js';
import type { DetectedField } from '../../detect/types.js';
import { CHOICE_FIELD_TYPES, MAX_FIELDS_PER_DOCUMENT, validateField, type FieldSpec } from '../../domain/fields.js';
import { newId } from '../../domain/ids.js';
import { markDocumentChanged } from '../../store/documents.js';
import { documentUpdated } from '../events.js';
import { deleteAllFields, fieldSpecs, insertFieldRows, toFieldRow } from '../../store/fields.js';
import type { Database, DocumentFieldRow, DocumentRow } from '../../store/schema.js';

/** A detected box as the fields it may become (parse jobs). */
export interface Candidate {
  spec: FieldSpec;
  confidence: number;
}

/** The fields a detection result proposes, as field definitions. */
export function candidatesOf(fields: readonly DetectedField[]): Candidate[] {
  return fields.map((field) => {
    const spec: FieldSpec = {
      label: field.label,
      type: field.type,
      pageNumber: field.pageNumber,
      x: field.rect.x,
      y: field.rect.y,
      width: field.rect.width,
      height: field.rect.height,
      isRequired: field.isRequired,
      isReadOnly: field.isReadOnly,
      assigneeRole: field.assigneeRole,
      defaultValue: null,
      direction: 'auto',
      options: CHOICE_FIELD_TYPES.has(field.type) && field.options.choices ? { choices: field.options.choices } : {},
    };
    return { spec, confidence: field.confidence };
  });
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
  now: string,
): Promise<{ createdFieldIds: string[]; deletedFieldIds: string[] }> {
  let deletedFieldIds: string[] = [];
  if (options.replaceExisting) deletedFieldIds = await deleteAllFields(trx, document.id);
  const existing = await fieldSpecs(trx, document.id);
  const pageCount = Number(document.page_count);
  let position = existing.length;
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
    rows.push(toFieldRow(newId(), document.id, spec, position++, now, now));
  }
  await insertFieldRows(trx, rows);
  if (rows.length > 0 || deletedFieldIds.length > 0) {
    await markDocumentChanged(trx, document, Date.parse(now));
    await documentUpdated(trx, document.workspace_id, document.id);
  }
  return { createdFieldIds: rows.map((r) => r.id), deletedFieldIds };
}
