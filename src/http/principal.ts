import type { FastifyRequest } from 'fastify';
import { AppError } from '../domain/errors.js';
import type { Principal } from '../store/keys.js';

/** The workspace of the key behind an authenticated request. */
export function workspaceOf(request: FastifyRequest): string {
  if (!request.principal) throw new AppError('missing_api_key', 'Send your API key in the header "Authorization: Bearer <API key>".');
  return request.principal.workspaceId;
}

/** Who is asking (the verified key), as the services take it. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new AppError('missing_api_key', 'Send your API key in the header "Authorization: Bearer <API key>".');
  return request.principal;
}
