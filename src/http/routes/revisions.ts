import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Static } from 'typebox';
import { invalid } from '../../domain/errors.js';
import type { Store } from '../../store/db.js';
import { pathId } from '../params.js';
import { getRevision, listRevisions, parseVersion, publishDocument, publishForm, type RevisionKind } from '../../store/revisions.js';
import { applyPagination, listEnvelope } from '../pagination.js';
import { keyIdOf, workspaceOf } from '../principal.js';
import { IdParams, Ok, OkList, responses } from '../schemas/common.js';
import { NoQuery } from '../schemas/forms.js';
import {
  DocumentRevision,
  DocumentRevisionWithSnapshot,
  FormRevision,
  FormRevisionWithSnapshot,
  ListRevisionsQuery,
  PublishBody,
  PublishedDocument,
  PublishedForm,
  RevisionParams,
} from '../schemas/revisions.js';

function summaryOf(body: Static<typeof PublishBody> | undefined): string | null {
  const given = body?.changesSummary;
  if (given === undefined || given === null) return null;
  const trimmed = given.trim();
  if (trimmed.length === 0) throw invalid('changesSummary', 'must not be blank (omit it to have one generated)');
  return trimmed;
}

/**
 * Publishing (`POST /forms/{id}/publish`, `POST /documents/{id}/publish`) and reading revisions
 * back (`GET …/revisions`, `GET …/revisions/{version}`).
 */
export function revisionRoutes(app: FastifyInstance, store: Store, budgetBytes?: number): void {
  const kinds = [
    { kind: 'form', path: 'forms', label: 'Form', tag: 'Forms', grant: 'forms:write', publish: publishForm, Published: PublishedForm, Revision: FormRevision, WithSnapshot: FormRevisionWithSnapshot },
    { kind: 'document', path: 'documents', label: 'Document', tag: 'Documents', grant: 'documents:write', publish: publishDocument, Published: PublishedDocument, Revision: DocumentRevision, WithSnapshot: DocumentRevisionWithSnapshot },
  ] as const;

  for (const { kind, path, label, tag, grant, publish, Published, Revision, WithSnapshot } of kinds) {
    app.post<{ Params: Static<typeof IdParams>; Body: Static<typeof PublishBody> }>(`/api/v1/${path}/:id/publish`, {
      config: { grants: [grant], optionalBody: true },
      schema: { tags: [tag], summary: 'Publish the draft as the next revision', params: IdParams, querystring: NoQuery, body: PublishBody, response: responses(201, Ok(Published), { location: 'The new revision' }) },
      handler: async (request, reply) => {
        const id = pathId(label, request.params.id);
        const published = await publish(store, workspaceOf(request), id, { keyId: keyIdOf(request), changesSummary: summaryOf(request.body), budgetBytes });
        reply.code(201).header('location', `/api/v1/${path}/${id}/revisions/${published.revision.version}`);
        return { success: true, data: published };
      },
    });

    app.get<{ Params: Static<typeof IdParams>; Querystring: Static<typeof ListRevisionsQuery> }>(`/api/v1/${path}/:id/revisions`, {
      config: { grants: ['revisions:read'] },
      schema: { tags: [tag, 'Revisions'], summary: `List the revisions of a ${kind}, newest first`, params: IdParams, querystring: ListRevisionsQuery, response: responses(200, OkList(Revision)) },
      handler: async (request) => {
        const page = applyPagination(request.query);
        const { items, total } = await listRevisions(store.db, kind as RevisionKind, workspaceOf(request), pathId(label, request.params.id), page);
        return listEnvelope(items, total, page);
      },
    });

    app.get<{ Params: Static<typeof RevisionParams> }>(`/api/v1/${path}/:id/revisions/:version`, {
      config: { grants: ['revisions:read'] },
      schema: { tags: [tag, 'Revisions'], summary: `Get one revision of a ${kind} with its snapshot`, params: RevisionParams, querystring: NoQuery, response: responses(200, Ok(WithSnapshot)) },
      handler: async (request, reply) => {
        const { revision, snapshot } = await getRevision(store.db, kind as RevisionKind, workspaceOf(request), pathId(label, request.params.id), parseVersion(request.params.version));
        return sendWithSnapshot(reply, revision, snapshot);
      },
    });
  }
}

/**
 * The revision with its snapshot spliced in as stored: the snapshot is served byte for byte as it
 * was frozen, and a large one is not parsed and serialised again on every read.
 */
function sendWithSnapshot(reply: FastifyReply, revision: object, snapshot: string): FastifyReply {
  const head = JSON.stringify({ success: true, data: revision });
  // `head` ends with `}}`: insert the snapshot as the last key of `data`.
  const body = `${head.slice(0, -2)},"snapshot":${snapshot}}}`;
  return reply.type('application/json; charset=utf-8').send(body);
}
