import type { FastifyInstance } from 'fastify';
import type { Static } from 'typebox';
import { AppError } from '../../domain/errors.js';
import type { JobQueue } from '../../jobs/queue.js';
import type { Store } from '../../store/db.js';
import { pathId } from '../params.js';
import { applyParseJob, getParseJob, startParseJob, type ParseParams } from '../../store/parse-jobs.js';
import { workspaceOf } from '../principal.js';
import { IdParams, Ok, responses } from '../schemas/common.js';
import { NoQuery } from '../schemas/forms.js';
import { AppliedFields, ApplyParseJobBody, ParseJobParams, ParseJobSchema, StartParseJobBody } from '../schemas/parse-jobs.js';

export interface ParseJobDeps {
  queue: JobQueue;
  /** Tells this process's worker (if it runs one) that a job is waiting. */
  wake(): void;
  /** Whether an AI engine is configured (AI_BASE_URL …). */
  aiConfigured: boolean;
}


/** `POST /documents/{id}/parse-jobs`, `GET …/{jobId}`, `POST …/{jobId}/apply`. */
export function parseJobRoutes(app: FastifyInstance, store: Store, deps: ParseJobDeps): void {
  const tags = ['Parse jobs'];
  app.post<{ Params: Static<typeof IdParams>; Body: Static<typeof StartParseJobBody> }>('/api/v1/documents/:id/parse-jobs', {
    config: { grants: ['documents:write', 'documents:parse_ai'], optionalBody: true },
    schema: { tags, summary: 'Start detecting fields (202; poll the job)', params: IdParams, querystring: NoQuery, body: StartParseJobBody, response: responses(202, Ok(ParseJobSchema), { location: 'The job: poll it there' }) },
    handler: async (request, reply) => {
      const documentId = pathId('Document', request.params.id);
      const requested = request.body.engine ?? 'auto';
      if (requested === 'ai' && !deps.aiConfigured) {
        throw new AppError('ai_not_configured', 'engine "ai" needs an AI endpoint (AI_BASE_URL, AI_API_KEY, AI_MODEL) configured on the server; use "layout" or "auto".');
      }
      const params: ParseParams = { applyMode: request.body.applyMode ?? 'draft', engine: requested === 'auto' ? (deps.aiConfigured ? 'ai' : 'layout') : requested };
      const job = await startParseJob(store, deps.queue, workspaceOf(request), documentId, params);
      deps.wake();
      reply.code(202).header('location', `/api/v1/documents/${documentId}/parse-jobs/${job.id}`);
      return { success: true, data: job };
    },
  });

  app.get<{ Params: Static<typeof ParseJobParams> }>('/api/v1/documents/:id/parse-jobs/:jobId', {
    config: { grants: ['documents:read'] },
    schema: { tags, summary: 'Poll a parse job', params: ParseJobParams, querystring: NoQuery, response: responses(200, Ok(ParseJobSchema)) },
    handler: async (request) => {
      const documentId = pathId('Document', request.params.id);
      const job = await getParseJob(store.db, workspaceOf(request), documentId, pathId('Parse job', request.params.jobId));
      return { success: true, data: job };
    },
  });

  app.post<{ Params: Static<typeof ParseJobParams>; Body: Static<typeof ApplyParseJobBody> }>('/api/v1/documents/:id/parse-jobs/:jobId/apply', {
    config: { grants: ['documents:write', 'documents:parse_ai'], optionalBody: true },
    schema: { tags, summary: "Add a completed preview's fields to the draft (once)", params: ParseJobParams, querystring: NoQuery, body: ApplyParseJobBody, response: responses(200, Ok(AppliedFields)) },
    handler: async (request) => {
      const documentId = pathId('Document', request.params.id);
      const jobId = pathId('Parse job', request.params.jobId);
      const applied = await applyParseJob(store, workspaceOf(request), documentId, jobId, {
        minConfidence: request.body.minConfidence ?? 0,
        replaceExisting: request.body.replaceExisting ?? false,
      });
      return { success: true, data: applied };
    },
  });
}
