import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { AppError } from '../../domain/errors.js';
import type { RouteDeps } from '../route-deps.js';
import { Ok, responses } from '../schemas/common.js';

const Health = Ok(Type.Object({ status: Type.Literal('ok') }));

/** `/healthz` and `/readyz` (outside the API prefix, no key). */
export function operationRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { store } = deps;
  const tags = ['Operations'];
  app.get('/healthz', {
    schema: { tags, summary: 'The process is alive', security: [], response: responses(200, Health) },
    handler: async () => ({ success: true, data: { status: 'ok' } }),
  });
  app.get('/readyz', {
    schema: { tags, summary: 'The database answers', security: [], response: responses(200, Health) },
    handler: async (request) => {
      try {
        await store.ping();
      } catch (error) {
        request.log.warn({ err: error }, 'readiness check failed');
        throw new AppError('unavailable', 'The database is not reachable.');
      }
      return { success: true, data: { status: 'ok' } };
    },
  });
}
