import type { FastifyInstance } from 'fastify';
import { Type, type Static } from 'typebox';
import { isoNow } from '../../domain/clock.js';
import { invalid } from '../../domain/errors.js';
import { SETTINGS_MAX_BYTES } from '../../domain/limits.js';
import { deleteForm } from '../../services/delete-form.js';
import { readFormWithContent } from '../../services/read-form.js';
import { updateForm } from '../../services/update-form.js';
import { listForms } from '../../store/forms.js';
import { createForm } from '../../services/create-form.js';
import { tagOfStamp } from '../conditional.js';
import { pathId } from '../params.js';
import { sendShared } from '../precompressed.js';
import { applyPagination, listEnvelope } from '../pagination.js';
import { principalOf, workspaceOf } from '../principal.js';
import type { RouteDeps } from '../route-deps.js';
import { DeleteQuery, Deleted, IdParams, NoQuery, Ok, OkList, responses } from '../schemas/common.js';
import { QuestionSchema, RuleSchema, SectionSchema } from '../schemas/content.js';
import { CreateFormBody, Form, ListFormsQuery, SettingsPatch, UpdateFormBody } from '../schemas/forms.js';

const FormWithContent = Type.Intersect([Form, Type.Object({ sections: Type.Array(SectionSchema), questions: Type.Array(QuestionSchema), rules: Type.Array(RuleSchema) })]);


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

const CLOSE = Buffer.from('}}');

/** Forms: list, create, read with their content, update (incl. publish, archive, restore), delete. */
export function formRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { store } = deps;
  const tags = ['Forms'];

  app.get<{ Querystring: Static<typeof ListFormsQuery> }>('/forms', {
    config: { grants: ['forms:read'] },
    schema: { tags, summary: 'List forms, newest first', querystring: ListFormsQuery, response: responses(200, OkList(Form)) },
    handler: async (request) => {
      const page = applyPagination(request.query);
      const { items, total } = await listForms(store.db, workspaceOf(request), { status: request.query.status }, page);
      return listEnvelope(items, total, page);
    },
  });

  app.post<{ Body: Static<typeof CreateFormBody> }>('/forms', {
    config: { grants: ['forms:write'], opaqueKeys: ['settings'] },
    schema: { tags, summary: 'Create a form', querystring: NoQuery, body: CreateFormBody, response: responses(201, Ok(Form), { location: 'The form' }) },
    handler: async (request, reply) => {
      const { title, description, settings } = request.body;
      checkSettings(settings);
      const form = await createForm(deps, principalOf(request), { title: checkTitle(title)!, description, settings });
      reply.code(201).header('location', `/api/v1/forms/${form.id}`);
      return { success: true, data: form };
    },
  });

  app.get<{ Params: Static<typeof IdParams> }>('/forms/:id', {
    config: { grants: ['forms:read'] },
    schema: { tags, summary: 'Get a form with its sections, questions and rules', params: IdParams, querystring: NoQuery, response: responses(200, Ok(FormWithContent)) },
    handler: async (request, reply) => {
      const { form, content } = await readFormWithContent(deps, principalOf(request), { formId: pathId('Form', request.params.id) });
      const head = JSON.stringify({ success: true, data: form });
      // Tagged here, since a compressed answer cannot be read for its tag (conditional.ts).
      reply.header('etag', tagOfStamp(form.id, form.updatedAt));
      // `head` ends with `}}`: the content goes in as the last keys of `data`. Compressed once for
      // every request that reads this form at this stamp (content is the cached buffer of it).
      return sendShared(request, reply, content, head, () => Buffer.concat([Buffer.from(`${head.slice(0, -2)},`), content, CLOSE]));
    },
  });

  app.put<{ Params: Static<typeof IdParams>; Body: Static<typeof UpdateFormBody> }>('/forms/:id', {
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
      const form = await updateForm(deps, principalOf(request), { formId: id, patch: { ...body, title: checkTitle(body.title) } });
      return { success: true, data: form };
    },
  });

  app.put<{ Params: Static<typeof IdParams>; Body: Static<typeof SettingsPatch> }>('/forms/:id/settings', {
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
      const form = await updateForm(deps, principalOf(request), { formId: pathId('Form', request.params.id), patch: { settingsMerge: request.body } });
      return { success: true, data: form };
    },
  });

  app.delete<{ Params: Static<typeof IdParams>; Querystring: Static<typeof DeleteQuery> }>('/forms/:id', {
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
      await deleteForm(deps, principalOf(request), { formId: id, permanent: request.query.permanent === true });
      return { success: true, data: { id, deleted: true } };
    },
  });
}
