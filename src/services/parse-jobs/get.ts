import { notFound } from '../../domain/errors.js';
import { liveDocuments } from '../../store/live.js';
import { getParseJobRow } from '../../store/parse-jobs.js';
import type { Deps, Principal } from '../deps.js';
import { toParseJob, type ParseJobView } from './view.js';

/** `GET /documents/{id}/parse-jobs/{jobId}`: a parse job of a live document of the workspace. */
export async function getParseJob(deps: Deps, principal: Principal, input: { documentId: string; jobId: string }): Promise<ParseJobView> {
  const { store, clock } = deps;
  const document = await liveDocuments(store.db, principal.workspaceId).select('id').where('id', '=', input.documentId).executeTakeFirst();
  if (!document) throw notFound('Document');
  return toParseJob(await getParseJobRow(store.db, input.documentId, input.jobId), clock.now());
}
