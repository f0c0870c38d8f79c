import { answerQuestions, checkAnswers } from '../domain/answers.js';
import { notFound } from '../domain/errors.js';
import { compileLogic, evaluateLogic } from '../domain/logic.js';
import { yieldToLoop } from '../domain/yield.js';
import { draftStamp, loadFormWithContent, logicOf } from '../store/form-content.js';
import { findFormRevision, formSnapshotOf } from '../store/revisions.js';
import type { Deps, Principal } from './deps.js';
import type { FormSnapshot } from './publish.js';

/**
 * `POST /forms/{id}/evaluate`: which questions and sections show for the given answers, on the
 * draft or on a revision (`version`). Compiled forms are kept in `deps.caches`.
 */
export async function evaluateForm(
  deps: Deps,
  principal: Principal,
  input: { formId: string; answers: Record<string, unknown>; version?: number },
): Promise<ReturnType<typeof evaluateLogic>> {
  const { store, caches } = deps;
  const { workspaceId } = principal;
  const { formId, answers, version } = input;
  if (version !== undefined) {
    // A revision never changes: its questions and compiled logic are kept after the first use.
    const known = Number.isInteger(version) && version >= 1 && version <= 2_147_483_647;
    const revisionId = await findFormRevision(store.db, workspaceId, formId, known ? version : null);
    let prepared = caches.compiledRevisions.get(revisionId);
    if (!prepared) {
      // Gone since the line above (the form deleted for good meanwhile): as if never there.
      const snapshot = await formSnapshotOf<FormSnapshot>(store.db, revisionId);
      if (!snapshot) throw notFound('Revision');
      await yieldToLoop();
      prepared = { questions: answerQuestions(snapshot.value.questions), logic: compileLogic(logicOf(snapshot.value)) };
      caches.compiledRevisions.set(revisionId, prepared, snapshot.bytes);
    }
    checkAnswers(prepared.questions, answers);
    return evaluateLogic(prepared.logic, answers);
  }
  // The draft: compiled again only when its stamp moved (any change of it, through any server,
  // moves the stamp forward in the same transaction); the stamp kept is the one read with the
  // content, in one statement, so an entry never pairs a newer stamp with older content.
  const stamp = await draftStamp(store.db, workspaceId, formId);
  if (stamp === undefined) throw notFound('Form');
  const prepared = await caches.compiledDrafts.get(formId, stamp, async () => {
    const found = await loadFormWithContent(store, workspaceId, formId);
    if (!found) return undefined;
    await yieldToLoop();
    const value = { questions: answerQuestions(found.content.questions), logic: compileLogic(logicOf(found.content)) };
    return { value, stamp: found.form.updated_at, bytes: found.bytes };
  });
  if (!prepared) throw notFound('Form');
  checkAnswers(prepared.value.questions, answers);
  return evaluateLogic(prepared.value.logic, answers);
}
