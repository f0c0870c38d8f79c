import type { FastifyInstance } from 'fastify';
import { Type, type Static } from 'typebox';
import { answerQuestions, checkAnswers, type AnswerQuestions } from '../../domain/answers.js';
import { ByteLru } from '../../domain/byte-lru.js';
import { StampedCache } from '../draft-cache.js';
import { yieldToLoop } from '../../domain/yield.js';
import { invalid, notFound } from '../../domain/errors.js';
import { compileLogic, evaluateLogic, type CompiledLogic } from '../../domain/logic.js';
import type { Store } from '../../store/db.js';
import { pathId } from '../params.js';
import {
  createQuestion,
  createRule,
  createSection,
  deleteQuestion,
  deleteRule,
  deleteSection,
  draftStamp,
  listContent,
  loadFormWithContent,
  logicOf,
  updateQuestion,
  updateRule,
  updateSection,
} from '../../store/form-content.js';
import { findFormRevision, formSnapshotOf } from '../../store/revisions.js';
import { applyPagination, listEnvelope, paginationQuery } from '../pagination.js';
import { workspaceOf } from '../principal.js';
import { Deleted, IdParams, Ok, OkList, responses } from '../schemas/common.js';
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
import { NoQuery } from '../schemas/forms.js';

const ListQuery = Type.Object(paginationQuery, { additionalProperties: false });

/**
 * Compiled forms kept for `POST /evaluate`, per server, each cache up to about this many bytes of
 * the JSON they were compiled from (the objects kept are of the same order): revisions (which
 * never change) by id, drafts by form id with the stamp of the draft they were compiled from.
 */
const COMPILED_FORMS_BYTES = 64 * 1024 * 1024;

interface Compiled {
  questions: AnswerQuestions;
  logic: CompiledLogic;
}

/** Questions, sections and rules of forms, and evaluation of the show/hide logic. */
export function contentRoutes(app: FastifyInstance, store: Store): void {
  const revisions = new ByteLru<Compiled>(COMPILED_FORMS_BYTES);
  const drafts = new StampedCache<Compiled>(COMPILED_FORMS_BYTES);
  const read = { grants: ['forms:read' as const] };
  const write = { grants: ['forms:write' as const], opaqueKeys: ['options', 'value'] };

  const lists = [
    ['questions', 'Questions', QuestionSchema],
    ['sections', 'Sections', SectionSchema],
    ['rules', 'Rules', RuleSchema],
  ] as const;
  for (const [path, tag, schema] of lists) {
    app.get<{ Params: Static<typeof IdParams>; Querystring: Static<typeof ListQuery> }>(`/api/v1/forms/:id/${path}`, {
      config: read,
      schema: { tags: [tag], summary: `List ${path} in order`, params: IdParams, querystring: ListQuery, response: responses(200, OkList(schema)) },
      handler: async (request) => {
        const page = applyPagination(request.query);
        const workspaceId = workspaceOf(request);
        const formId = pathId('Form', request.params.id);
        const found = await listContent(store.db, workspaceId, formId, path, page);
        if (!found) throw notFound('Form');
        return listEnvelope(found.items, found.total, page);
      },
    });
  }

  app.post<{ Params: Static<typeof IdParams>; Body: Static<typeof CreateQuestionBody> }>('/api/v1/forms/:id/questions', {
    config: write,
    schema: { tags: ['Questions'], summary: 'Create a question', params: IdParams, querystring: NoQuery, body: CreateQuestionBody, response: responses(201, Ok(QuestionSchema), { location: 'The question' }) },
    handler: async (request, reply) => {
      const formId = pathId('Form', request.params.id);
      const question = await createQuestion(store, workspaceOf(request), formId, { ...request.body, questionText: checkText('questionText', request.body.questionText) });
      reply.code(201).header('location', `/api/v1/forms/${formId}/questions/${question.id}`);
      return { success: true, data: question };
    },
  });
  app.put<{ Params: Static<typeof QuestionParams>; Body: Static<typeof UpdateQuestionBody> }>('/api/v1/forms/:id/questions/:qid', {
    config: write,
    schema: { tags: ['Questions'], summary: 'Update a question (only the keys given)', params: QuestionParams, querystring: NoQuery, body: UpdateQuestionBody, response: responses(200, Ok(QuestionSchema)) },
    handler: async (request) => {
      const body = request.body;
      const question = await updateQuestion(store, workspaceOf(request), pathId('Form', request.params.id), pathId('Question', request.params.qid), {
        ...body,
        ...(body.questionText !== undefined ? { questionText: checkText('questionText', body.questionText) } : {}),
      });
      return { success: true, data: question };
    },
  });
  app.delete<{ Params: Static<typeof QuestionParams> }>('/api/v1/forms/:id/questions/:qid', {
    config: write,
    schema: { tags: ['Questions'], summary: 'Delete a question and the rules that use it', params: QuestionParams, querystring: NoQuery, response: responses(200, Deleted) },
    handler: async (request) => {
      const qid = pathId('Question', request.params.qid);
      await deleteQuestion(store, workspaceOf(request), pathId('Form', request.params.id), qid);
      return { success: true, data: { id: qid, deleted: true } };
    },
  });

  app.post<{ Params: Static<typeof IdParams>; Body: Static<typeof CreateSectionBody> }>('/api/v1/forms/:id/sections', {
    config: write,
    schema: { tags: ['Sections'], summary: 'Create a section', params: IdParams, querystring: NoQuery, body: CreateSectionBody, response: responses(201, Ok(SectionSchema), { location: 'The section' }) },
    handler: async (request, reply) => {
      const formId = pathId('Form', request.params.id);
      const section = await createSection(store, workspaceOf(request), formId, { ...request.body, title: checkText('title', request.body.title) });
      reply.code(201).header('location', `/api/v1/forms/${formId}/sections/${section.id}`);
      return { success: true, data: section };
    },
  });
  app.put<{ Params: Static<typeof SectionParams>; Body: Static<typeof UpdateSectionBody> }>('/api/v1/forms/:id/sections/:sid', {
    config: write,
    schema: { tags: ['Sections'], summary: 'Update a section (only the keys given)', params: SectionParams, querystring: NoQuery, body: UpdateSectionBody, response: responses(200, Ok(SectionSchema)) },
    handler: async (request) => {
      const body = request.body;
      const section = await updateSection(store, workspaceOf(request), pathId('Form', request.params.id), pathId('Section', request.params.sid), {
        ...body,
        ...(body.title !== undefined ? { title: checkText('title', body.title) } : {}),
      });
      return { success: true, data: section };
    },
  });
  app.delete<{ Params: Static<typeof SectionParams> }>('/api/v1/forms/:id/sections/:sid', {
    config: write,
    schema: { tags: ['Sections'], summary: 'Delete a section (its questions stay, without a section; rules that target it go)', params: SectionParams, querystring: NoQuery, response: responses(200, Deleted) },
    handler: async (request) => {
      const sid = pathId('Section', request.params.sid);
      await deleteSection(store, workspaceOf(request), pathId('Form', request.params.id), sid);
      return { success: true, data: { id: sid, deleted: true } };
    },
  });

  app.post<{ Params: Static<typeof IdParams>; Body: Static<typeof RuleBody> }>('/api/v1/forms/:id/rules', {
    config: write,
    schema: { tags: ['Rules'], summary: 'Create a rule (short or full form)', params: IdParams, querystring: NoQuery, body: RuleBody, response: responses(201, Ok(RuleSchema), { location: 'The rule' }) },
    handler: async (request, reply) => {
      const formId = pathId('Form', request.params.id);
      const rule = await createRule(store, workspaceOf(request), formId, request.body);
      reply.code(201).header('location', `/api/v1/forms/${formId}/rules/${rule.id}`);
      return { success: true, data: rule };
    },
  });
  app.put<{ Params: Static<typeof RuleParams>; Body: Static<typeof RuleBody> }>('/api/v1/forms/:id/rules/:rid', {
    config: write,
    schema: { tags: ['Rules'], summary: 'Update a rule (either form; sent conditions replace the old ones)', params: RuleParams, querystring: NoQuery, body: RuleBody, response: responses(200, Ok(RuleSchema)) },
    handler: async (request) => ({
      success: true,
      data: await updateRule(store, workspaceOf(request), pathId('Form', request.params.id), pathId('Rule', request.params.rid), request.body),
    }),
  });
  app.delete<{ Params: Static<typeof RuleParams> }>('/api/v1/forms/:id/rules/:rid', {
    config: write,
    schema: { tags: ['Rules'], summary: 'Delete a rule', params: RuleParams, querystring: NoQuery, response: responses(200, Deleted) },
    handler: async (request) => {
      const rid = pathId('Rule', request.params.rid);
      await deleteRule(store, workspaceOf(request), pathId('Form', request.params.id), rid);
      return { success: true, data: { id: rid, deleted: true } };
    },
  });

  app.post<{ Params: Static<typeof IdParams>; Body: Static<typeof EvaluateBody> }>('/api/v1/forms/:id/evaluate', {
    config: { grants: ['forms:read'], opaqueKeys: ['answers'] },
    schema: { tags: ['Rules'], summary: 'Which questions and sections show for given answers', params: IdParams, querystring: NoQuery, body: EvaluateBody, response: responses(200, Ok(EvaluationSchema)) },
    handler: async (request) => {
      const workspaceId = workspaceOf(request);
      const formId = pathId('Form', request.params.id);
      const answers = request.body.answers ?? {};
      const { version } = request.body;
      if (version !== undefined) {
        // A revision never changes: its questions and compiled logic are kept after the first use.
        const known = Number.isInteger(version) && version >= 1 && version <= 2_147_483_647;
        const revisionId = await findFormRevision(store.db, workspaceId, formId, known ? version : null);
        let prepared = revisions.get(revisionId);
        if (!prepared) {
          // Gone since the line above (the form deleted for good meanwhile): as if never there.
          const snapshot = await formSnapshotOf(store.db, revisionId);
          if (!snapshot) throw notFound('Revision');
          await yieldToLoop();
          prepared = { questions: answerQuestions(snapshot.value.questions), logic: compileLogic(logicOf(snapshot.value)) };
          revisions.set(revisionId, prepared, snapshot.bytes);
        }
        checkAnswers(prepared.questions, answers);
        return { success: true, data: evaluateLogic(prepared.logic, answers) };
      }
      // The draft: compiled again only when its stamp moved (any change of it, through any server,
      // moves the stamp forward in the same transaction); the stamp kept is the one read with the
      // content, in one statement, so an entry never pairs a newer stamp with older content.
      const stamp = await draftStamp(store.db, workspaceId, formId);
      if (stamp === undefined) throw notFound('Form');
      const prepared = await drafts.get(formId, stamp, async () => {
        const found = await loadFormWithContent(store, workspaceId, formId);
        if (!found) return undefined;
        await yieldToLoop();
        const value = { questions: answerQuestions(found.content.questions), logic: compileLogic(logicOf(found.content)) };
        return { value, stamp: found.form.updated_at, bytes: found.bytes };
      });
      if (!prepared) throw notFound('Form');
      checkAnswers(prepared.value.questions, answers);
      return { success: true, data: evaluateLogic(prepared.value.logic, answers) };
    },
  });
}

function checkText(key: string, value: string): string {
  const trimmed = value.trim();
  if (trimmed.length === 0) throw invalid(key, 'must not be blank');
  return trimmed;
}
