import { isoNow } from '../domain/clock.js';
import { createForm as insertForm, type Form, type FormInput } from '../store/forms.js';
import { recordEvent } from '../webhooks/events.js';
import type { Deps, Principal } from './deps.js';

/** `POST /forms`: the form and its `form_created` event, in one transaction. */
export async function createForm(deps: Deps, principal: Principal, input: FormInput): Promise<Form> {
  return deps.store.db.transaction().execute(async (trx) => {
    const form = await insertForm(trx, principal.workspaceId, input, isoNow(deps.clock));
    await recordEvent(trx, principal.workspaceId, 'form_created', { form });
    return form;
  });
}
