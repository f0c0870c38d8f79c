import type { Transaction } from 'kysely';
import type { Clock } from '../domain/clock.js';
import { AppError } from '../domain/errors.js';
import {
  definitionHash,
  definitionTexts,
  diffDocuments,
  diffForms,
  formLists,
  summarize,
  type DocumentDefinition,
  type FormDefinition,
  type SnapshotItem,
} from '../domain/revisions.js';
import { yieldToLoop } from '../domain/yield.js';
import { upgradeFormSnapshot } from '../domain/legacy-options.js';
import { toDocument, type DocumentView } from '../store/documents.js';
import { listFields, type FieldView } from '../store/fields.js';
import { loadContent, loadFormWithContent, type FormContent } from '../store/form-content.js';
import { toForm, type Form } from '../store/forms.js';
import { lockLiveDocument, lockLiveForm, nextStamp } from '../store/live.js';
import {
  formRevisionSnapshot,
  freeze,
  frozenOf,
  nextVersion,
  noChanges,
  withVersionRetry,
  type PublishOptions,
  type RevisionView,
} from '../store/revisions.js';
import type { Database, DocumentRow, FormRow } from '../store/schema.js';
import { recordEvent } from '../webhooks/events.js';
import type { Deps, Principal } from './deps.js';

/**
 * Publishing: a form's or a document's draft frozen into its next revision (`POST …/publish`,
 * and `PUT` with `status: "published"`, see update-form.ts and update-document.ts).
 */

export type FormSnapshot = { form: Form } & FormContent;
export interface DocumentSnapshot {
  document: DocumentView;
  fields: FieldView[];
}

/** Who publishes, with which summary, within which budget. */
export function optionsOf(deps: Pick<Deps, 'revisionBytesPerWorkspace'>, principal: Principal, changesSummary: string | null): PublishOptions {
  return { keyId: principal.keyId, changesSummary, budgetBytes: deps.revisionBytesPerWorkspace };
}

/**
 * The definition the diff and the hash read, from the objects of a form snapshot (a previous
 * revision's from before 0009 read in today's shape, so a summary counts only real changes).
 */
function formDefinition(stored: FormSnapshot): FormDefinition {
  const snapshot = upgradeFormSnapshot(stored);
  const { title, description, settings } = snapshot.form;
  const items = (list: unknown[]) => list as SnapshotItem[];
  return { form: { title, description, settings }, sections: items(snapshot.sections), questions: items(snapshot.questions), rules: items(snapshot.rules) };
}

function documentDefinition(snapshot: DocumentSnapshot): DocumentDefinition {
  return { document: { title: snapshot.document.title, sha256: snapshot.document.sha256 }, fields: snapshot.fields as unknown as SnapshotItem[] };
}


/**
 * Publishes the form whose row `row` the caller has locked in `trx`: freezes the draft into the
 * next revision and marks the form published. `null` when there is nothing to publish: the draft
 * equals the last revision, and its `has_unpublished_changes` is then 0 (cleared if it was set).
 */
export async function publishFormLocked(
  clock: Clock,
  trx: Transaction<Database>,
  row: FormRow,
  options: PublishOptions,
  /** The publish worked out before the transaction, for exactly this row (the caller checked). */
  prepared?: PreparedPublish,
): Promise<{ form: Form; revision: RevisionView } | null> {
  if (row.current_version !== null && !row.has_unpublished_changes) return null;
  if (prepared) {
    const frozen = { hash: prepared.hash, text: prepared.text, summary: prepared.summary, describe: () => prepared.summary };
    const revision = await freeze(trx, 'form', row.workspace_id, row.id, prepared.version, prepared.now, frozen, {}, options);
    return published(trx, row.workspace_id, 'form_published', revision && { form: prepared.form, revision });
  }
  const content = await loadContent(trx, row.id);
  const version = nextVersion(row);
  const now = nextStamp(row.updated_at, clock.now());
  const form = toForm({ ...row, status: 'published', current_version: version, has_unpublished_changes: 0, updated_at: now }, content.questions.length);
  const snapshot: FormSnapshot = { form, sections: content.sections, questions: content.questions, rules: content.rules };
  const definition = formDefinition(snapshot);
  const revision = await freeze(
    trx, 'form', row.workspace_id, row.id, version, now,
    frozenOf(snapshot, definition, (previous) => summarize(diffForms(previous === null ? null : formDefinition(previous as FormSnapshot), definition), previous === null)),
    {}, options,
  );
  return published(trx, row.workspace_id, 'form_published', revision && { form, revision });
}

/**
 * A form's publish worked out outside any transaction: its snapshot as JSON, the definition's
 * hash and the summary. For a large form this is most of the work of publishing (megabytes parsed,
 * hashed, diffed and serialised): done here, in short turns of the event loop, it holds no lock
 * and stalls no one; the transaction then only checks that the form is still as read (`baseStamp`,
 * `baseVersion`) and writes.
 */
export interface PreparedPublish {
  /** The form's `updated_at` and `current_version` it was worked out from. */
  baseStamp: string;
  baseVersion: number | null;
  /** The form's `updated_at` after `patch` (the stamp `updateForm` writes), and after publishing. */
  patchedStamp: string;
  now: string;
  version: number;
  form: Form;
  hash: string;
  text: string;
  /** The summary to store: the client's, or generated from the previous revision. */
  summary: string;
}

/** The form-level keys `PUT /forms/{id}` may change along with publishing. */
export interface FormAttributes {
  title?: string;
  description?: string | null;
  settings?: Record<string, unknown>;
}

/** The columns `attributes` change in `row` (none when they equal the row's). */
export function attributeChanges(row: FormRow, attributes: FormAttributes): Partial<FormRow> {
  const changes: Partial<FormRow> = {};
  if (attributes.title !== undefined && attributes.title !== row.title) changes.title = attributes.title;
  if (attributes.description !== undefined && attributes.description !== row.description) changes.description = attributes.description;
  if (attributes.settings !== undefined) {
    const settings = JSON.stringify(attributes.settings);
    if (settings !== row.settings) changes.settings = settings;
  }
  return changes;
}

/** `undefined` when the form is not there (live, of the workspace). */
export async function prepareFormPublish(
  { store, clock }: Pick<Deps, 'store' | 'clock'>,
  workspaceId: string,
  formId: string,
  attributes: FormAttributes,
  options: PublishOptions,
): Promise<PreparedPublish | undefined> {
  const found = await loadFormWithContent(store, workspaceId, formId);
  if (!found) return undefined;
  await yieldToLoop();
  const base = found.form;
  const changes = attributeChanges(base, attributes);
  const patchedStamp = Object.keys(changes).length > 0 ? nextStamp(base.updated_at, clock.now()) : base.updated_at;
  const version = nextVersion(base);
  const now = nextStamp(patchedStamp, clock.now());
  const form = toForm({ ...base, ...changes, status: 'published', current_version: version, has_unpublished_changes: 0, updated_at: now }, found.questionCount);
  const snapshot: FormSnapshot = { form, ...found.content };
  const definition = formDefinition(snapshot);
  const define = await definitionTexts(formLists(definition), yieldToLoop);
  const hash = definitionHash(definition, define);
  await yieldToLoop();
  const text = JSON.stringify(snapshot);
  await yieldToLoop();
  let summary = options.changesSummary ?? null;
  if (summary === null) {
    // Revisions never change: the previous one can be read and diffed before the transaction.
    const previous = base.current_version === null ? undefined : await formRevisionSnapshot(store.db, formId, Number(base.current_version));
    await yieldToLoop();
    const before = previous ? formDefinition(JSON.parse(previous) as FormSnapshot) : null;
    await yieldToLoop();
    const defineBoth = before ? await definitionTexts(formLists(before), yieldToLoop, define) : define;
    summary = summarize(diffForms(before, definition, defineBoth), before === null);
    await yieldToLoop();
  }
  const baseVersion = base.current_version === null ? null : Number(base.current_version);
  return { baseStamp: base.updated_at, baseVersion, patchedStamp, now, version, form, hash, text, summary };
}

/** Whether `row` (locked) is still the form `prepared` was worked out from. */
export function stillPrepared(row: FormRow, prepared: PreparedPublish | undefined): prepared is PreparedPublish {
  return prepared !== undefined && row.updated_at === prepared.baseStamp && (row.current_version === null ? null : Number(row.current_version)) === prepared.baseVersion;
}

/** `POST /forms/{id}/publish`: `409 no_changes` when there is nothing to publish. */
export async function publishForm(
  deps: Deps,
  principal: Principal,
  input: { formId: string; changesSummary: string | null },
): Promise<{ form: Form; revision: RevisionView }> {
  const { store, clock } = deps;
  const { workspaceId } = principal;
  const { formId } = input;
  const options = optionsOf(deps, principal, input.changesSummary);
  // The heavy part first, outside the transaction; in it, used only if the form is still as read
  // (else worked out again there, as a concurrent change requires). The transaction commits
  // before `no_changes` is thrown: clearing a stale flag is kept.
  const prepared = await prepareFormPublish(deps, workspaceId, formId, {}, options);
  const published = await withVersionRetry(() =>
    store.db.transaction().execute(async (trx) => {
      const row = await lockLiveForm(trx, store.dialect, workspaceId, formId);
      if (row.status === 'archived') throw new AppError('form_not_editable', 'This form is archived and read only; it cannot be published again. Its revisions stay readable.');
      return publishFormLocked(clock, trx, row, options, stillPrepared(row, prepared) ? prepared : undefined);
    }),
  );
  if (!published) throw noChanges('form');
  return published;
}

/** As `publishFormLocked`, for a document whose row the caller has locked; the revision keeps its files. */
export async function publishDocumentLocked(
  clock: Clock,
  trx: Transaction<Database>,
  row: DocumentRow,
  options: PublishOptions,
): Promise<{ document: DocumentView; revision: RevisionView } | null> {
  if (row.current_version !== null && !row.has_unpublished_changes) return null;
  const fields = await listFields(trx, row.id);
  const version = nextVersion(row);
  const now = nextStamp(row.updated_at, clock.now());
  const document = toDocument({ ...row, status: 'published', current_version: version, has_unpublished_changes: 0, updated_at: now });
  const snapshot: DocumentSnapshot = { document, fields };
  const definition = documentDefinition(snapshot);
  const revision = await freeze(
    trx, 'document', row.workspace_id, row.id, version, now,
    frozenOf(snapshot, definition, (previous) => summarize(diffDocuments(previous === null ? null : documentDefinition(previous as DocumentSnapshot), definition), previous === null)),
    { sha256: row.sha256, rendition_sha256: row.rendition_sha256 }, options,
  );
  return published(trx, row.workspace_id, 'document_published', revision && { document, revision });
}

/** `POST /documents/{id}/publish`: `409 no_changes` when there is nothing to publish. */
export async function publishDocument(
  deps: Deps,
  principal: Principal,
  input: { documentId: string; changesSummary: string | null },
): Promise<{ document: DocumentView; revision: RevisionView }> {
  const { store, clock } = deps;
  const { workspaceId } = principal;
  const { documentId } = input;
  const options = optionsOf(deps, principal, input.changesSummary);
  const published = await withVersionRetry(() =>
    store.db.transaction().execute(async (trx) => {
      const row = await lockLiveDocument(trx, store.dialect, workspaceId, documentId);
      if (row.status === 'archived') throw new AppError('document_not_editable', 'This document is archived and read only; it cannot be published again. Its revisions stay readable.');
      return publishDocumentLocked(clock, trx, row, options);
    }),
  );
  if (!published) throw noChanges('document');
  return published;
}

/** Records the `…_published` event of a publish that happened (`result` not null), in its transaction. */
async function published<T extends { revision: RevisionView }>(trx: Transaction<Database>, workspaceId: string, type: 'form_published' | 'document_published', result: T | null): Promise<T | null> {
  if (result) await recordEvent(trx, workspaceId, type, result as unknown as Record<string, unknown>);
  return result;
}
