import type { FastifyInstance } from 'fastify';
import { Type, type Static } from 'typebox';
import { createFields } from '../../services/create-fields.js';
import { deleteField } from '../../services/delete-field.js';
import { updateField } from '../../services/update-field.js';
import { listDocumentFields } from '../../store/fields.js';
import { documentId, pathId } from '../params.js';
import { applyPagination, listEnvelope } from '../pagination.js';
import { principalOf, workspaceOf } from '../principal.js';
import type { RouteDeps } from '../route-deps.js';
import { Deleted, ListQuery, NoQuery, Ok, OkList, responses } from '../schemas/common.js';
import { BulkFieldsBody, CreateFieldBody, DocumentParams, FieldParams, FieldSchema, UpdateFieldBody } from '../schemas/documents.js';

const fieldId = (id: string): string => pathId('Field', id);

/** A document's fields: list, create (one, or 1 to 500 at once), update, delete. */
export function fieldRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { store } = deps;
  const tags = ['Document fields'];

  app.get<{ Params: Static<typeof DocumentParams>; Querystring: Static<typeof ListQuery> }>('/documents/:id/fields', {
    config: { grants: ['documents:read'] },
    schema: { tags, summary: 'List fields in order', params: DocumentParams, querystring: ListQuery, response: responses(200, OkList(FieldSchema)) },
    handler: async (request) => {
      const page = applyPagination(request.query);
      const { items, total } = await listDocumentFields(store.db, workspaceOf(request), documentId(request.params.id), page);
      return listEnvelope(items, total, page);
    },
  });

  app.post<{ Params: Static<typeof DocumentParams>; Body: Static<typeof CreateFieldBody> }>('/documents/:id/fields', {
    config: { grants: ['documents:write'] },
    schema: { tags, summary: 'Create a field', params: DocumentParams, querystring: NoQuery, body: CreateFieldBody, response: responses(201, Ok(FieldSchema), { location: 'The field' }) },
    handler: async (request, reply) => {
      const id = documentId(request.params.id);
      const [field] = await createFields(deps, principalOf(request), { documentId: id, fields: [request.body] });
      reply.code(201).header('location', `/api/v1/documents/${id}/fields/${field!.id}`);
      return { success: true, data: field };
    },
  });

  app.post<{ Params: Static<typeof DocumentParams>; Body: Static<typeof BulkFieldsBody> }>('/documents/:id/fields/bulk', {
    config: { grants: ['documents:write'] },
    schema: {
      tags,
      summary: 'Create 1 to 500 fields, all or none, appended in the order given',
      params: DocumentParams,
      querystring: NoQuery,
      body: BulkFieldsBody,
      response: responses(201, Ok(Type.Array(FieldSchema))),
    },
    handler: async (request, reply) => {
      const id = documentId(request.params.id);
      const fields = await createFields(deps, principalOf(request), { documentId: id, fields: request.body.fields, pathOf: (i) => `fields[${i}].` });
      reply.code(201);
      return { success: true, data: fields };
    },
  });

  app.put<{ Params: Static<typeof FieldParams>; Body: Static<typeof UpdateFieldBody> }>('/documents/:id/fields/:fid', {
    config: { grants: ['documents:write'] },
    schema: { tags, summary: 'Update a field (only the keys given)', params: FieldParams, querystring: NoQuery, body: UpdateFieldBody, response: responses(200, Ok(FieldSchema)) },
    handler: async (request) => {
      const field = await updateField(deps, principalOf(request), { documentId: documentId(request.params.id), fieldId: fieldId(request.params.fid), patch: request.body });
      return { success: true, data: field };
    },
  });

  app.delete<{ Params: Static<typeof FieldParams> }>('/documents/:id/fields/:fid', {
    config: { grants: ['documents:write'] },
    schema: { tags, summary: 'Delete a field', params: FieldParams, querystring: NoQuery, response: responses(200, Deleted) },
    handler: async (request) => {
      const fid = fieldId(request.params.fid);
      await deleteField(deps, principalOf(request), { documentId: documentId(request.params.id), fieldId: fid });
      return { success: true, data: { id: fid, deleted: true } };
    },
  });
}
