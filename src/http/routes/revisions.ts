import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Static } from 'typebox';
import { invalid } from '../../domain/errors.js';
import { publishDocument, publishForm } from '../../services/publish.js';
import { readRevisionAnswer } from '../../services/read-revision.js';
import { listRevisions, parseVersion, type RevisionKind } from '../../store/revisions.js';
import { tagOfAnswer } from '../conditional.js';
import { sendShared } from '../precompressed.js';
import { pathId } from '../params.js';
import { presentDocument } from '../document-answer.js';
import { applyPagination, listEnvelope } from '../pagination.js';
import { principalOf, workspaceOf } from '../principal.js';
import type { RouteDeps } from '../route-deps.js';
import { IdParams, ListQuery, NoQuery, Ok, OkList, responses } from '../schemas/common.js';
import {
  DocumentRevision,
  DocumentRevisionWithSnapshot,
  FormRevision,
  FormRevisionWithSnapshot,
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
export function revisionRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { store } = deps;

  const list = (kind: RevisionKind, label: string) => async (request: { query: Static<typeof ListQuery>; params: Static<typeof IdParams> } & Parameters<typeof workspaceOf>[0]) => {
    const page = applyPagination(request.query);
    const { items, total } = await listRevisions(store.db, kind, workspaceOf(request), pathId(label, request.params.id), page);
    return listEnvelope(items, total, page);
  };

  const get = (kind: RevisionKind, label: string) => async (request: FastifyRequest<{ Params: Static<typeof RevisionParams> }>, reply: FastifyReply) => {
    const answer = await readRevisionAnswer(deps, principalOf(request), { kind, parentId: pathId(label, request.params.id), version: parseVersion(request.params.version) }, tagOfAnswer);
    // Tagged here, since a compressed answer cannot be read for its tag (conditional.ts); the
    // answer is compressed once for every request that reads this revision (precompressed.ts).
    reply.header('etag', answer.etag);
    return sendShared(request, reply, answer.body, '', () => answer.body);
  };

  // Forms
  app.post<{ Params: Static<typeof IdParams>; Body: Static<typeof PublishBody> }>('/forms/:id/publish', {
    config: { grants: ['forms:write'], optionalBody: true },
    schema: { tags: ['Forms'], summary: 'Publish the draft as the next revision', params: IdParams, querystring: NoQuery, body: PublishBody, response: responses(201, Ok(PublishedForm), { location: 'The new revision' }) },
    handler: async (request, reply) => {
      const id = pathId('Form', request.params.id);
      const published = await publishForm(deps, principalOf(request), { formId: id, changesSummary: summaryOf(request.body) });
      reply.code(201).header('location', `/api/v1/forms/${id}/revisions/${published.revision.version}`);
      return { success: true, data: published };
    },
  });

  app.get<{ Params: Static<typeof IdParams>; Querystring: Static<typeof ListQuery> }>('/forms/:id/revisions', {
    config: { grants: ['revisions:read'] },
    schema: { tags: ['Forms', 'Revisions'], summary: 'List the revisions of a form, newest first', params: IdParams, querystring: ListQuery, response: responses(200, OkList(FormRevision)) },
    handler: list('form', 'Form'),
  });

  app.get<{ Params: Static<typeof RevisionParams> }>('/forms/:id/revisions/:version', {
    config: { grants: ['revisions:read'] },
    schema: { tags: ['Forms', 'Revisions'], summary: 'Get one revision of a form with its snapshot', params: RevisionParams, querystring: NoQuery, response: responses(200, Ok(FormRevisionWithSnapshot)) },
    handler: get('form', 'Form'),
  });

  // Documents
  app.post<{ Params: Static<typeof IdParams>; Body: Static<typeof PublishBody> }>('/documents/:id/publish', {
    config: { grants: ['documents:write'], optionalBody: true },
    schema: { tags: ['Documents'], summary: 'Publish the draft as the next revision', params: IdParams, querystring: NoQuery, body: PublishBody, response: responses(201, Ok(PublishedDocument), { location: 'The new revision' }) },
    handler: async (request, reply) => {
      const id = pathId('Document', request.params.id);
      const published = await publishDocument(deps, principalOf(request), { documentId: id, changesSummary: summaryOf(request.body) });
      reply.code(201).header('location', `/api/v1/documents/${id}/revisions/${published.revision.version}`);
      // The document as it is now (with its downloadUrl, as every read of it); the revision's snapshot keeps none.
      return { success: true, data: { ...published, document: await presentDocument(deps, request, published.document) } };
    },
  });

  app.get<{ Params: Static<typeof IdParams>; Querystring: Static<typeof ListQuery> }>('/documents/:id/revisions', {
    config: { grants: ['revisions:read'] },
    schema: { tags: ['Documents', 'Revisions'], summary: 'List the revisions of a document, newest first', params: IdParams, querystring: ListQuery, response: responses(200, OkList(DocumentRevision)) },
    handler: list('document', 'Document'),
  });

  app.get<{ Params: Static<typeof RevisionParams> }>('/documents/:id/revisions/:version', {
    config: { grants: ['revisions:read'] },
    schema: { tags: ['Documents', 'Revisions'], summary: 'Get one revision of a document with its snapshot', params: RevisionParams, querystring: NoQuery, response: responses(200, Ok(DocumentRevisionWithSnapshot)) },
    handler: get('document', 'Document'),
  });
}
