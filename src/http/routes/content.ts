import type { FastifyInstance } from 'fastify';
import type { Static } from 'typebox';
import { invalid, notFound } from '../../domain/errors.js';
import { evaluateForm } from '../../services/evaluate.js';
import { createQuestion } from '../../services/form-content/create-question.js';
import { createRule } from '../../services/form-content/create-rule.js';
import { createSection } from '../../services/form-content/create-section.js';
import { deleteQuestion } from '../../services/form-content/delete-question.js';
import { deleteRule } from '../../services/form-content/delete-rule.js';
import { deleteSection } from '../../services/form-content/delete-section.js';
import { updateQuestion } from '../../services/form-content/update-question.js';
import { updateRule } from '../../services/form-content/update-rule.js';
import { updateSection } from '../../services/form-content/update-section.js';
import { listContent, type ContentKind } from '../../store/form-content.js';
import { pathId } from '../params.js';
import { applyPagination, listEnvelope } from '../pagination.js';
import { principalOf, workspaceOf } from '../principal.js';
import type { RouteDeps } from '../route-deps.js';
import { Deleted, IdParams, ListQuery, NoQuery, Ok, OkList, responses } from '../schemas/common.js';
import {
  CreateQuestionBody,
  CreateSectionBody,
  EvaluateBody,
  EvaluationSchema,
  QuestionParams,
  QuestionSchema,
  RuleBody,
  RuleParams,
  RuleSchema,
  SectionParams,
  SectionSchema,
  UpdateQuestionBody,
  UpdateSectionBody,
} from '../schemas/content.js';

/** Questions, sections and rules of forms, and evaluation of the show/hide logic. */
export function contentRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { store } = deps;
  const read = { grants: ['forms:read' as const] };
  const write = { grants: ['forms:write' as const], opaqueKeys: ['options', 'value'] };

  /** One page of a form's questions, sections or rules, in order. */
  const list = (kind: ContentKind) => async (request: { query: Static<typeof ListQuery>; params: Static<typeof IdParams> } & Parameters<typeof workspaceOf>[0]) => {
    const page = applyPagination(request.query);
    const found = await listContent(store.db, workspaceOf(request), pathId('Form', request.params.id), kind, page);
    if (!found) throw notFound('Form');
    return listEnvelope(found.items, found.total, page);
  };

  app.get<{ Params: Static<typeof IdParams>; Querystring: Static<typeof ListQuery> }>('/forms/:id/questions', {
    config: read,
    schema: { tags: ['Questions'], summary: 'List questions in order', params: IdParams, querystring: ListQuery, response: responses(200, OkList(QuestionSchema)) },
    handler: list('questions'),
  });
  app.get<{ Params: Static<typeof IdParams>; Querystring: Static<typeof ListQuery> }>('/forms/:id/sections', {
    config: read,
    schema: { tags: ['Sections'], summary: 'List sections in order', params: IdParams, querystring: ListQuery, response: responses(200, OkList(SectionSchema)) },
    handler: list('sections'),
  });
  app.get<{ Params: Static<typeof IdParams>; Querystring: Static<typeof ListQuery> }>('/forms/:id/rules', {
    config: read,
    schema: { tags: ['Rules'], summary: 'List rules in order', params: IdParams, querystring: ListQuery, response: responses(200, OkList(RuleSchema)) },
    handler: list('rules'),
  });

  app.post<{ Params: Static<typeof IdParams>; Body: Static<typeof CreateQuestionBody> }>('/forms/:id/questions', {
    config: write,
    schema: { tags: ['Questions'], summary: 'Create a question', params: IdParams, querystring: NoQuery, body: CreateQuestionBody, response: responses(201, Ok(QuestionSchema), { location: 'The question' }) },
    handler: async (request, reply) => {
      const formId = pathId('Form', request.params.id);
      const question = await createQuestion(deps, principalOf(request), { formId, question: { ...request.body, questionText: checkText('questionText', request.body.questionText) } });
      reply.code(201).header('location', `/api/v1/forms/${formId}/questions/${question.id}`);
      return { success: true, data: question };
    },
  });
  app.put<{ Params: Static<typeof QuestionParams>; Body: Static<typeof UpdateQuestionBody> }>('/forms/:id/questions/:qid', {
    config: write,
    schema: { tags: ['Questions'], summary: 'Update a question (only the keys given)', params: QuestionParams, querystring: NoQuery, body: UpdateQuestionBody, response: responses(200, Ok(QuestionSchema)) },
    handler: async (request) => {
      const body = request.body;
      const question = await updateQuestion(deps, principalOf(request), {
        formId: pathId('Form', request.params.id),
        questionId: pathId('Question', request.params.qid),
        patch: { ...body, ...(body.questionText !== undefined ? { questionText: checkText('questionText', body.questionText) } : {}) },
      });
      return { success: true, data: question };
    },
  });
  app.delete<{ Params: Static<typeof QuestionParams> }>('/forms/:id/questions/:qid', {
    config: write,
    schema: { tags: ['Questions'], summary: 'Delete a question and the rules that use it', params: QuestionParams, querystring: NoQuery, response: responses(200, Deleted) },
    handler: async (request) => {
      const qid = pathId('Question', request.params.qid);
      await deleteQuestion(deps, principalOf(request), { formId: pathId('Form', request.params.id), questionId: qid });
      return { success: true, data: { id: qid, deleted: true } };
    },
  });

  app.post<{ Params: Static<typeof IdParams>; Body: Static<typeof CreateSectionBody> }>('/forms/:id/sections', {
    config: write,
    schema: { tags: ['Sections'], summary: 'Create a section', params: IdParams, querystring: NoQuery, body: CreateSectionBody, response: responses(201, Ok(SectionSchema), { location: 'The section' }) },
    handler: async (request, reply) => {
      const formId = pathId('Form', request.params.id);
      const section = await createSection(deps, principalOf(request), { formId, section: { ...request.body, title: checkText('title', request.body.title) } });
      reply.code(201).header('location', `/api/v1/forms/${formId}/sections/${section.id}`);
      return { success: true, data: section };
    },
  });
  app.put<{ Params: Static<typeof SectionParams>; Body: Static<typeof UpdateSectionBody> }>('/forms/:id/sections/:sid', {
    config: write,
    schema: { tags: ['Sections'], summary: 'Update a section (only the keys given)', params: SectionParams, querystring: NoQuery, body: UpdateSectionBody, response: responses(200, Ok(SectionSchema)) },
    handler: async (request) => {
      const body = request.body;
      const section = await updateSection(deps, principalOf(request), {
        formId: pathId('Form', request.params.id),
        sectionId: pathId('Section', request.params.sid),
        patch: { ...body, ...(body.title !== undefined ? { title: checkText('title', body.title) } : {}) },
      });
      return { success: true, data: section };
    },
  });
  app.delete<{ Params: Static<typeof SectionParams> }>('/forms/:id/sections/:sid', {
    config: write,
    schema: { tags: ['Sections'], summary: 'Delete a section (its questions stay, without a section; rules that target it go)', params: SectionParams, querystring: NoQuery, response: responses(200, Deleted) },
    handler: async (request) => {
      const sid = pathId('Section', request.params.sid);
      await deleteSection(deps, principalOf(request), { formId: pathId('Form', request.params.id), sectionId: sid });
      return { success: true, data: { id: sid, deleted: true } };
    },
  });

  app.post<{ Params: Static<typeof IdParams>; Body: Static<typeof RuleBody> }>('/forms/:id/rules', {
    config: write,
    schema: { tags: ['Rules'], summary: 'Create a rule (short or full form)', params: IdParams, querystring: NoQuery, body: RuleBody, response: responses(201, Ok(RuleSchema), { location: 'The rule' }) },
    handler: async (request, reply) => {
      const formId = pathId('Form', request.params.id);
      const rule = await createRule(deps, principalOf(request), { formId, rule: request.body });
      reply.code(201).header('location', `/api/v1/forms/${formId}/rules/${rule.id}`);
      return { success: true, data: rule };
    },
  });
  app.put<{ Params: Static<typeof RuleParams>; Body: Static<typeof RuleBody> }>('/forms/:id/rules/:rid', {
    config: write,
    schema: { tags: ['Rules'], summary: 'Update a rule (either form; sent conditions replace the old ones)', params: RuleParams, querystring: NoQuery, body: RuleBody, response: responses(200, Ok(RuleSchema)) },
    handler: async (request) => ({
      success: true,
      data: await updateRule(deps, principalOf(request), { formId: pathId('Form', request.params.id), ruleId: pathId('Rule', request.params.rid), rule: request.body }),
    }),
  });
  app.delete<{ Params: Static<typeof RuleParams> }>('/forms/:id/rules/:rid', {
    config: write,
    schema: { tags: ['Rules'], summary: 'Delete a rule', params: RuleParams, querystring: NoQuery, response: responses(200, Deleted) },
    handler: async (request) => {
      const rid = pathId('Rule', request.params.rid);
      await deleteRule(deps, principalOf(request), { formId: pathId('Form', request.params.id), ruleId: rid });
      return { success: true, data: { id: rid, deleted: true } };
    },
  });

  app.post<{ Params: Static<typeof IdParams>; Body: Static<typeof EvaluateBody> }>('/forms/:id/evaluate', {
    config: { grants: ['forms:read'], opaqueKeys: ['answers'] },
    schema: { tags: ['Rules'], summary: 'Which questions and sections show for given answers', params: IdParams, querystring: NoQuery, body: EvaluateBody, response: responses(200, Ok(EvaluationSchema)) },
    handler: async (request) => {
      const formId = pathId('Form', request.params.id);
      const evaluation = await evaluateForm(deps, principalOf(request), { formId, answers: request.body.answers ?? {}, version: request.body.version });
      return { success: true, data: evaluation };
    },
  });
}

function checkText(key: string, value: string): string {
  const trimmed = value.trim();
  if (trimmed.length === 0) throw invalid(key, 'must not be blank');
  return trimmed;
}
