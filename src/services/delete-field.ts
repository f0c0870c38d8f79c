import { deleteFieldRow, fieldSiblings, getFieldRow } from '../store/fields.js';
import { closeGap } from '../store/ordering.js';
import type { Deps, Principal } from './deps.js';
import { editDocumentDraft } from './document-draft.js';

/** `DELETE /documents/{id}/fields/{fid}`: the fields after it move up. */
export async function deleteField(deps: Deps, principal: Principal, input: { documentId: string; fieldId: string }): Promise<void> {
  const { documentId, fieldId } = input;
  await editDocumentDraft(deps, principal.workspaceId, documentId, async (trx) => {
    const row = await getFieldRow(trx, documentId, fieldId);
    await deleteFieldRow(trx, fieldId);
    await closeGap(trx, fieldSiblings(documentId), Number(row.position));
  });
}
