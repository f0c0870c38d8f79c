import { isoNow } from '../domain/clock.js';
import { invalid } from '../domain/errors.js';
import { MAX_FIELDS_PER_DOCUMENT, validateField } from '../domain/fields.js';
import { newId } from '../domain/ids.js';
import { fieldSiblings, insertFieldRows, toField, toFieldRow, withDefaults, type FieldInput, type FieldView } from '../store/fields.js';
import { clampPosition, countSiblings, openGap } from '../store/ordering.js';
import type { Deps, Principal } from './deps.js';
import { editDocumentDraft } from './document-draft.js';

/**
 * `POST /documents/{id}/fields` and `POST …/fields/bulk`: creates fields, all or none. With one
 * input its `order` places it (the others shift); a bulk create appends in the order given.
 * `pathOf(i)` names an item in hints (`fields[3].`).
 */
export async function createFields(
  deps: Deps,
  principal: Principal,
  input: { documentId: string; fields: FieldInput[]; pathOf?: (i: number) => string },
): Promise<FieldView[]> {
  const { documentId, fields: inputs, pathOf = () => '' } = input;
  return editDocumentDraft(deps, principal.workspaceId, documentId, async (trx, document) => {
    const specs = inputs.map((input, i) => {
      const spec = withDefaults(input);
      validateField(spec, Number(document.page_count), pathOf(i));
      return spec;
    });
    const count = await countSiblings(trx, fieldSiblings(documentId));
    if (count + inputs.length > MAX_FIELDS_PER_DOCUMENT) {
      throw invalid(inputs.length > 1 ? 'fields' : '', `a document holds at most ${MAX_FIELDS_PER_DOCUMENT} fields; it has ${count}`);
    }
    let position = inputs.length === 1 ? clampPosition(inputs[0]!.order, count) : count;
    if (position < count) await openGap(trx, fieldSiblings(documentId), position);
    const now = isoNow(deps.clock);
    const rows = specs.map((spec) => toFieldRow(newId(), documentId, spec, position++, now, now));
    await insertFieldRows(trx, rows);
    return rows.map(toField);
  });
}
