import { isoNow } from '../domain/clock.js';
import { validateField, type FieldSpec } from '../domain/fields.js';
import { fieldSiblings, getFieldRow, specOf, toField, toFieldRow, updateFieldRow, type FieldPatch, type FieldView } from '../store/fields.js';
import { clampPosition, countSiblings, shiftBetween } from '../store/ordering.js';
import type { Deps, Principal } from './deps.js';
import { editDocumentDraft } from './document-draft.js';

/** `PUT /documents/{id}/fields/{fid}`: changes the keys given; the field is checked whole. */
export async function updateField(
  deps: Deps,
  principal: Principal,
  input: { documentId: string; fieldId: string; patch: FieldPatch },
): Promise<FieldView> {
  const { documentId, fieldId, patch } = input;
  return editDocumentDraft(deps, principal.workspaceId, documentId, async (trx, document) => {
    const row = await getFieldRow(trx, documentId, fieldId);
    const current = toField(row);
    const { order, ...changes } = patch;
    const merged: FieldSpec = { ...specOf(current), ...changes, options: changes.options ?? current.options };
    // Checked whole: a change of type away from a choice type must also send `options` without choices.
    validateField(merged, Number(document.page_count));
    let position = current.order;
    if (order !== undefined) {
      const count = await countSiblings(trx, fieldSiblings(documentId));
      position = Math.min(clampPosition(order, count), count - 1);
    }
    if (position === current.order && JSON.stringify(merged) === JSON.stringify(specOf(current))) {
      return { field: current, changed: false };
    }
    await shiftBetween(trx, fieldSiblings(documentId), current.order, position);
    const updated = toFieldRow(row.id, documentId, merged, position, row.created_at, isoNow(deps.clock));
    await updateFieldRow(trx, updated);
    return { field: toField(updated), changed: true };
  }).then((result) => result.field);
}
