import { yieldToLoop } from '../domain/yield.js';
import { listFields } from '../store/fields.js';
import type { DocumentRow } from '../store/schema.js';
import type { Deps } from './deps.js';

/**
 * `GET /documents/{id}`: the document's fields as its answer holds them (a JSON array),
 * made once per stamp of the document and kept in `deps.caches`, so that a document of 5,000 fields
 * is not read and serialised again on every read. The stamp is the document's `updated_at`, which
 * every change of its fields moves forward (`markDocumentChanged`). `row` is the document's row,
 * read in its workspace just before: the fields are read after it, so they are never older than
 * its stamp.
 */
export async function documentFieldsJson(deps: Deps, row: Pick<DocumentRow, 'id' | 'updated_at'>): Promise<Buffer> {
  const kept = await deps.caches.documentFields.get(row.id, row.updated_at, async () => {
    const fields = await listFields(deps.store.db, row.id);
    await yieldToLoop();
    const json = Buffer.from(JSON.stringify(fields));
    return { value: json, stamp: row.updated_at, bytes: json.length };
  });
  // The loader always answers (a document without fields has `[]`).
  return kept!.value;
}
