import type { FastifyInstance } from 'fastify';
import type { Static } from 'typebox';
import { invalid, notFound } from '../../domain/errors.js';
import { SETTINGS_MAX_BYTES } from '../../domain/limits.js';
import type { Store } from '../../store/db.js';
import { pathId } from '../params.js';
import { contentJson, liveFormRow, loadFormWithContent } from '../../store/form-content.js';
import type { FormRow } from '../../store/schema.js';
import { StampedCache } from '../draft-cache.js';
import { yieldToLoop } from '../../domain/yield.js';
import { createForm, deleteForm, listForms, toForm, updateForm } from '../../store/forms.js';
import { applyPagination, listEnvelope } from '../pagination.js';
import { Deleted, IdParams, Ok, OkList, responses } from '../schemas/common.js';
import { QuestionSchema, RuleSchema, SectionSchema } from '../schemas/content.js';
import { CreateFormBody, DeleteQuery, Form, ListFormsQuery, NoQuery, SettingsPatch, UpdateFormBody } from '../schemas/forms.js';
import { Type } from 'typebox';

const FormWithContent = Type.Intersect([Form, Type.Object({ sections: Type.Array(SectionSchema), questions: Type.Array(QuestionSchema), rules: Type.Array(RuleSchema) })]);
import { keyIdOf, workspaceOf } from '../principal.js';


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


/** Bytes of form content kept as JSON for `GET /forms/{id}`, per server. */
const CONTENT_CACHE_BYTES = 64 * 1024 * 1024;
const CLOSE = Buffer.from('}}');

export function formRoutes(app: FastifyInstance, store: Store, budgetBytes?: number): void {
  const tags = ['Forms'];
  const contents = new StampedCache<{ json: Buffer; questionCount: number; row: FormRow }>(CONTENT_CACHE_BYTES);

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
    handler: async (request, reply) => {
      const workspaceId = workspaceOf(request);
      const id = pathId('Form', request.params.id);
      const row = await liveFormRow(store.db, workspaceId, id);
      if (!row) throw notFound('Form');
      // The content as JSON, made once per version of the draft (its stamp) and spliced in: a
      // large form is not loaded, parsed and serialised again on every read. It was read with its
      // form row in one statement (one consistent state, never half of a change); should a change
      // have committed since `row` was read, that newer row goes with it.
      const content = await contents.get(id, row.updated_at, async () => {
        const found = await loadFormWithContent(store, workspaceId, id);
        if (!found) return undefined;
        await yieldToLoop();
        // Encoded once: each read then copies bytes, however large the form.
        const json = Buffer.from(contentJson(found.content));
        return { value: { json, questionCount: found.questionCount, row: found.form }, stamp: found.form.updated_at, bytes: json.length };
      });
      if (!content) throw notFound('Form');
      const current = content.stamp === row.updated_at ? row : content.value.row;
      const head = JSON.stringify({ success: true, data: toForm(current, content.value.questionCount) });
      // `head` ends with `}}`: the content goes in as the last keys of `data`.
      const body = Buffer.concat([Buffer.from(`${head.slice(0, -2)},`), content.value.json, CLOSE]);
      return reply.type('application/json; charset=utf-8').send(body);
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
      const form = await updateForm(store, workspaceOf(request), id, { ...body, title: checkTitle(body.title) }, { keyId: keyIdOf(request), budgetBytes });
      return { success: true, data: form };
    },
  });

  app.put<{ Params: Static<typeof IdParams>; Body: Static<typeof SettingsPatch> }>('/api/v1/forms/:id/settings', {
    config: { grants: ['forms:write'], opaqueBody: true },
    schema: {
      tags,
      summary: "Merge keys into the form's settings (a key set to null is removed)",
      params: IdParams,
      querystring: NoQuery,
      body: SettingsPatch,
      response: responses(200, Ok(Form)),
    },
    handler: async (request) => {
      const id = pathId('Form', request.params.id);
      const form = await updateForm(store, workspaceOf(request), id, { settingsMerge: request.body }, { keyId: keyIdOf(request), budgetBytes });
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
