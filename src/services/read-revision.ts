import { notFound } from '../domain/errors.js';
import { upgradeFormSnapshotText } from '../domain/legacy-options.js';
import { yieldToLoop } from '../domain/yield.js';
import { findRevision, revisionSnapshot, type RevisionKind } from '../store/revisions.js';
import type { CachedAnswer } from './caches.js';
import type { Deps, Principal } from './deps.js';

/**
 * `GET /forms/{id}/revisions/{version}` and `GET /documents/{id}/revisions/{version}`: the revision
 * with its snapshot spliced in as stored (served byte for byte as it was frozen, never parsed and
 * serialised again), made once per revision and kept in `deps.caches` (a revision never changes).
 * The revision is looked up in the workspace on every read, so a deleted form or document, or
 * another workspace's, is `404` whatever is kept. `tagOf` makes the answer's ETag from its bytes.
 */
export async function readRevisionAnswer(
  deps: Deps,
  principal: Principal,
  input: { kind: RevisionKind; parentId: string; version: number | null },
  tagOf: (body: Buffer) => string,
): Promise<CachedAnswer> {
  const { store, caches } = deps;
  const revision = await findRevision(store.db, input.kind, principal.workspaceId, input.parentId, input.version);
  const kept = await caches.revisionAnswers.get(`${input.kind}:${revision.id}`, '', async () => {
    const stored = await revisionSnapshot(store.db, input.kind, revision.id);
    if (stored === undefined) return undefined;
    await yieldToLoop();
    // Stored as published; a form's snapshot from before migration 0009 is served in today's shape.
    const snapshot = input.kind === 'form' ? upgradeFormSnapshotText(stored) : stored;
    const head = JSON.stringify({ success: true, data: revision });
    // `head` ends with `}}`: the snapshot goes in as the last key of `data`.
    const body = Buffer.from(`${head.slice(0, -2)},"snapshot":${snapshot}}}`);
    await yieldToLoop();
    return { value: { body, etag: tagOf(body) }, stamp: '', bytes: body.length };
  });
  // Gone between the two reads (its parent deleted for good meanwhile).
  if (!kept) throw notFound('Revision');
  return kept.value;
}
