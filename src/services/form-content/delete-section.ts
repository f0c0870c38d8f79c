import { isoNow } from '../../domain/clock.js';
import { notFound } from '../../domain/errors.js';
import { compactRules, contentSiblings, deleteSectionRow, detachQuestions } from '../../store/form-content.js';
import { closeGap } from '../../store/ordering.js';
import type { Deps, Principal } from '../deps.js';
import { editFormDraft } from './form-draft.js';

/** Deletes a section: its questions stay in the form without a section; rules that target it go (foreign key). */
export async function deleteSection(deps: Deps, principal: Principal, { formId, sectionId }: { formId: string; sectionId: string }): Promise<void> {
  await editFormDraft(deps, principal.workspaceId, formId, async (trx, content) => {
    const current = content.sections.find((s) => s.id === sectionId);
    if (!current) throw notFound('Section');
    await detachQuestions(trx, sectionId, isoNow(deps.clock));
    await deleteSectionRow(trx, sectionId);
    await closeGap(trx, contentSiblings('form_sections', formId), current.order);
    await compactRules(trx, formId);
  }, false);
}
