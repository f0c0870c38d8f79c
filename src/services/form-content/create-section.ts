import { isoNow } from '../../domain/clock.js';
import { newId } from '../../domain/ids.js';
import { contentSiblings, insertSection, toSection, type SectionView } from '../../store/form-content.js';
import { clampPosition, openGap } from '../../store/ordering.js';
import type { FormSectionRow } from '../../store/schema.js';
import type { Deps, Principal } from '../deps.js';
import { assertRoom, editFormDraft } from './form-draft.js';

export interface SectionInput {
  title?: string;
  description?: string | null;
  order?: number;
}

/** `POST /forms/{id}/sections`. */
export async function createSection(deps: Deps, principal: Principal, { formId, section: input }: { formId: string; section: SectionInput & { title: string } }): Promise<SectionView> {
  return editFormDraft(deps, principal.workspaceId, formId, async (trx, content) => {
    assertRoom('sections', content.sections.length);
    const position = clampPosition(input.order, content.sections.length);
    await openGap(trx, contentSiblings('form_sections', formId), position);
    const now = isoNow(deps.clock);
    const row: FormSectionRow = { id: newId(), form_id: formId, title: input.title, description: input.description ?? null, position, created_at: now, updated_at: now };
    await insertSection(trx, row);
    return toSection(row);
  });
}
