import type { FastifyInstance } from 'fastify';
import type { Static } from 'typebox';
import type { Store } from '../../store/db.js';
import { createFields, deleteField, listDocumentFields, updateField } from '../../store/fields.js';
import { applyPagination, listEnvelope, paginationQuery } from '../pagination.js';
import { workspaceOf } from '../principal.js';
import { Deleted, Ok, OkList, responses } from '../schemas/common.js';
import { BulkFieldsBody, CreateFieldBody, DocumentParams, FieldParams, FieldSchema, UpdateFieldBody } from '../schemas/documents.js';
import { NoQuery } from '../schemas/forms.js';
import { Type } from 'typebox';
import { documentId } from './documents.js';
import { pathId } from '../params.js';

const ListQuery = Type.Object(paginationQuery, { additionalProperties: false });

const fieldId = (id: string): string => pathId('Field', id);

export function fieldRoutes(app: FastifyInstance, store: Store): void {
  const tags = ['Document fields'];

  app.get<{ Params: Static<typeof DocumentParams>; Querystring: Static<typeof ListQuery> }>('/api/v1/documents/:id/fields', {
    config: { grants: ['documents:read'] },
    schema: { tags, summary: 'List fields in order', params: DocumentParams, querystring: ListQuery, response: responses(200, OkList(FieldSchema)) },
    handler: async (request) => {
      const page = applyPagination(request.query);
      const { items, total } = await listDocumentFields(store.db, workspaceOf(request), documentId(request.params.id), page);
      return listEnvelope(items, total, page);
    },
  });

  app.post<{ Params: Static<typeof DocumentParams>; Body: Static<typeof CreateFieldBody> }>('/api/v1/documents/:id/fields', {
    config: { grants: ['documents:write'] },
    schema: { tags, summary: 'Create a field', params: DocumentParams, querystring: NoQuery, body: CreateFieldBody, response: responses(201, Ok(FieldSchema), { location: 'The field' }) },
    handler: async (request, reply) => {
      const id = documentId(request.params.id);
      const [field] = await createFields(store, workspaceOf(request), id, [request.body]);
      reply.code(201).header('location', `/api/v1/documents/${id}/fields/${field!.id}`);
      return { success: true, data: field };
    },
  });

  app.post<{ Params: Static<typeof DocumentParams>; Body: Static<typeof BulkFieldsBody> }>('/api/v1/documents/:id/fields/bulk', {
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
      const fields = await createFields(store, workspaceOf(request), id, request.body.fields, (i) => `fields[${i}].`);
      reply.code(201);
      return { success: true, data: fields };
    },
  });

  app.put<{ Params: Static<typeof FieldParams>; Body: Static<typeof UpdateFieldBody> }>('/api/v1/documents/:id/fields/:fid', {
    config: { grants: ['documents:write'] },
    schema: { tags, summary: 'Update a field (only the keys given)', params: FieldParams, querystring: NoQuery, body: UpdateFieldBody, response: responses(200, Ok(FieldSchema)) },
    handler: async (request) => {
      const field = await updateField(store, workspaceOf(request), documentId(request.params.id), fieldId(request.params.fid), request.body);
      return { success: true, data: field };
    },
  });

  app.delete<{ Params: Static<typeof FieldParams> }>('/api/v1/documents/:id/fields/:fid', {
    config: { grants: ['documents:write'] },
    schema: { tags, summary: 'Delete a field', params: FieldParams, querystring: NoQuery, response: responses(200, Deleted) },
    handler: async (request) => {
      const fid = fieldId(request.params.fid);
      await deleteField(store, workspaceOf(request), documentId(request.params.id), fid);
      return { success: true, data: { id: fid, deleted: true } };
    },
  });
}
