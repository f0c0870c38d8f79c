import { notFound } from '../domain/errors.js';
import { yieldToLoop } from '../domain/yield.js';
import { contentJson, liveFormRow, loadFormWithContent } from '../store/form-content.js';
import { toForm, type Form } from '../store/forms.js';
import type { Deps, Principal } from './deps.js';

/**
 * `GET /forms/{id}`: the form, and its sections, questions and rules as JSON (`content`, the
 * object's last keys without braces), made once per version of the draft (its stamp) and kept in
 * `deps.caches`: a large form is not loaded, parsed and serialised again on every read.
 */
export async function readFormWithContent(deps: Deps, principal: Principal, input: { formId: string }): Promise<{ form: Form; content: Buffer }> {
  const { store, caches } = deps;
  const { workspaceId } = principal;
  const id = input.formId;
  const row = await liveFormRow(store.db, workspaceId, id);
  if (!row) throw notFound('Form');
  // It was read with its form row in one statement (one consistent state, never half of a
  // change); should a change have committed since `row` was read, that newer row goes with it.
  const content = await caches.formContent.get(id, row.updated_at, async () => {
    const found = await loadFormWithContent(store, workspaceId, id);
    if (!found) return undefined;
    await yieldToLoop();
    // Encoded once: each read then copies bytes, however large the form.
    const json = Buffer.from(contentJson(found.content));
    return { value: { json, questionCount: found.questionCount, row: found.form }, stamp: found.form.updated_at, bytes: json.length };
  });
  if (!content) throw notFound('Form');
  const current = content.stamp === row.updated_at ? row : content.value.row;
  return { form: toForm(current, content.value.questionCount), content: content.value.json };
}
