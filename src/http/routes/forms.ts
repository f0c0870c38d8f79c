import type { FastifyInstance } from 'fastify';
import type { Static } from 'typebox';
import { invalid, notFound } from '../../domain/errors.js';
import type { Store } from '../../store/db.js';
import { pathId } from '../params.js';
import { loadFormWithContent } from '../../store/form-content.js';
import { createForm, deleteForm, listForms, toForm, updateForm } from '../../store/forms.js';
import { applyPagination, listEnvelope } from '../pagination.js';
import { Deleted, IdParams, Ok, OkList, responses } from '../schemas/common.js';
import { QuestionSchema, RuleSchema, SectionSchema } from '../schemas/content.js';
import { CreateFormBody, DeleteQuery, Form, ListFormsQuery, NoQuery, UpdateFormBody } from '../schemas/forms.js';
import { Type } from 'typebox';

const FormWithContent = Type.Intersect([Form, Type.Object({ sections: Type.Array(SectionSchema), questions: Type.Array(QuestionSchema), rules: Type.Array(RuleSchema) })]);
import { keyIdOf, workspaceOf } from '../principal.js';

const SETTINGS_MAX_BYTES = 64 * 1024;

function checkSettings(settings: Record<string, unknown> | undefined): void {
  if (settings !== undefined && Buffer.byteLength(JSON.stringify(settings)) > SETTINGS_MAX_BYTES) {
    throw invalid('settings', `must be at most ${SETTINGS_MAX_BYTES} bytes as JSON`);
  }
}

function checkTitle(title: string | undefined): string | undefined {
  if (title === undefined) return undefined;
  const trimmed = title.trim();
  if (trimmed.length === 0) throw invalid('title', 'must not be blank');
  return trimmed;
}


export function formRoutes(app: FastifyInstance, store: Store): void {
  const tags = ['Forms'];

  app.get<{ Querystring: Static<typeof ListFormsQuery> }>('/api/v1/forms', {
    config: { grants: ['forms:read'] },
    schema: { tags, summary: 'List forms, newest first', querystring: ListFormsQuery, response: responses(200, OkList(Form)) },
    handler: async (request) => {
      const page = applyPagination(request.query);
      const { items, total } = await listForms(store.db, workspaceOf(request), { status: request.query.status }, page);
      return listEnvelope(items, total, page);
    },
  });

  app.post<{ Body: Static<typeof CreateFormBody> }>('/api/v1/forms', {
    config: { grants: ['forms:write'], opaqueKeys: ['settings'] },
    schema: { tags, summary: 'Create a form', querystring: NoQuery, body: CreateFormBody, response: responses(201, Ok(Form), { location: 'The form' }) },
    handler: async (request, reply) => {
      const { title, description, settings } = request.body;
      checkSettings(settings);
      const form = await createForm(store.db, workspaceOf(request), { title: checkTitle(title)!, description, settings });
      reply.code(201).header('location', `/api/v1/forms/${form.id}`);
      return { success: true, data: form };
    },
  });

  app.get<{ Params: Static<typeof IdParams> }>('/api/v1/forms/:id', {
    config: { grants: ['forms:read'] },
    schema: { tags, summary: 'Get a form with its sections, questions and rules', params: IdParams, querystring: NoQuery, response: responses(200, Ok(FormWithContent)) },
    handler: async (request) => {
      // The form and its content in one statement: one consistent state, never half of a change.
      const found = await loadFormWithContent(store, workspaceOf(request), pathId('Form', request.params.id));
      if (!found) throw notFound('Form');
      return { success: true, data: { ...toForm(found.form, found.questionCount), ...found.content } };
    },
  });

  app.put<{ Params: Static<typeof IdParams>; Body: Static<typeof UpdateFormBody> }>('/api/v1/forms/:id', {
    config: { grants: ['forms:write'], opaqueKeys: ['settings'] },
    schema: {
      tags,
      summary: 'Update a form (only the keys given)',
      params: IdParams,
      querystring: NoQuery,
      body: UpdateFormBody,
      response: responses(200, Ok(Form)),
    },
    handler: async (request) => {
      const id = pathId('Form', request.params.id);
      const body = request.body;
      checkSettings(body.settings);
      const form = await updateForm(store, workspaceOf(request), id, { ...body, title: checkTitle(body.title) }, keyIdOf(request));
      return { success: true, data: form };
    },
  });

  app.delete<{ Params: Static<typeof IdParams>; Querystring: Static<typeof DeleteQuery> }>('/api/v1/forms/:id', {
    config: { grants: ['forms:delete'] },
    schema: {
      tags,
      summary: 'Delete a form (soft; ?permanent=true removes it for good)',
      params: IdParams,
      querystring: DeleteQuery,
      response: responses(200, Deleted),
    },
    handler: async (request) => {
      const id = pathId('Form', request.params.id);
      await deleteForm(store.db, workspaceOf(request), id, request.query.permanent === true);
      return { success: true, data: { id, deleted: true } };
    },
  });
}
