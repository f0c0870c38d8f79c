import { isoNow } from '../../domain/clock.js';
import { notFound } from '../../domain/errors.js';
import { contentSiblings, updateSectionRow, type SectionView } from '../../store/form-content.js';
import { clampPosition, shiftBetween } from '../../store/ordering.js';
import type { Deps, Principal } from '../deps.js';
import type { SectionInput } from './create-section.js';
import { editFormDraft } from './form-draft.js';

/** `PUT /forms/{id}/sections/{sid}`: the keys given. */
export async function updateSection(deps: Deps, principal: Principal, { formId, sectionId, patch: input }: { formId: string; sectionId: string; patch: SectionInput }): Promise<SectionView> {
  return editFormDraft(deps, principal.workspaceId, formId, async (trx, content) => {
    const current = content.sections.find((s) => s.id === sectionId);
    if (!current) throw notFound('Section');
    const position = input.order === undefined ? current.order : Math.min(clampPosition(input.order, content.sections.length), content.sections.length - 1);
    const title = input.title ?? current.title;
    const description = input.description === undefined ? current.description : input.description;
    if (position === current.order && title === current.title && description === current.description) return { view: current, changed: false };
    await shiftBetween(trx, contentSiblings('form_sections', formId), current.order, position);
    const updated_at = isoNow(deps.clock);
    await updateSectionRow(trx, sectionId, { title, description, position, updated_at });
    return { view: { ...current, title, description, order: position, updatedAt: updated_at }, changed: true };
  }).then((r) => r.view);
}
