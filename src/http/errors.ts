import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorObject } from 'ajv';
import { storeUnavailable } from '../blobs/store.js';
import { AppError, CONNECTION_ERRORS, reasonPhrase, type ErrorCode } from '../domain/errors.js';
import { MAX_PAGE } from './pagination.js';
import { describeAjvError, pickAjvError } from './validation.js';

export interface ErrorBody {
  success: false;
  error: string;
  hint: string;
  code: ErrorCode;
}

export function errorBody(code: ErrorCode, status: number, hint: string): ErrorBody {
  return { success: false, error: reasonPhrase(status), hint, code };
}

const PAGINATION_KEYS = new Set(['/page', '/limit']);

/** PostgreSQL's SQLSTATEs for "not now": too many clients, shutting down, starting up. */
const POSTGRES_UNAVAILABLE = new Set(['53300', '57P01', '57P02', '57P03']);
/** node-postgres's own words when the pool cannot hand out a working connection (these carry no code). */
const POOL_UNAVAILABLE = /^(timeout exceeded when trying to connect|Connection terminated|Client has encountered a connection error)/;

/**
 * Whether an error means that the database could not be used at all (so nothing was written):
 * SQLite's lock held by another process past the wait, or PostgreSQL refusing, dropping or not
 * answering connections. The contract's answer is 503 `unavailable`, not 500.
 */
export function databaseUnavailable(error: unknown): boolean {
  const { code, message, errors } = (error ?? {}) as { code?: unknown; message?: unknown; errors?: unknown };
  if (typeof code === 'string') {
    if (code.startsWith('SQLITE_BUSY') || CONNECTION_ERRORS.has(code) || POSTGRES_UNAVAILABLE.has(code) || code.startsWith('08')) return true;
  }
  if (typeof message === 'string' && POOL_UNAVAILABLE.test(message)) return true;
  // Connecting to every address of a host name failed: Node reports them together.
  return Array.isArray(errors) && errors.length > 0 && errors.every(databaseUnavailable);
}

/** Maps anything thrown on the request path to the contract's envelope and a stable code. */
export function toAppError(error: unknown, request: FastifyRequest): AppError {
  if (error instanceof AppError) return error;
  const err = error as FastifyError & { validation?: ErrorObject[]; validationContext?: string; type?: string };
  if (err.validation) {
    const picked = pickAjvError(err.validation);
    const context = err.validationContext ?? 'body';
    if (context === 'querystring' && picked && PAGINATION_KEYS.has(picked.instancePath)) {
      const hint =
        picked.instancePath === '/page'
          ? `page must be a whole number from 1 to ${MAX_PAGE}`
          : 'limit must be a whole number of at least 1 (a limit above 100 is applied as 100)';
      return new AppError('invalid_pagination', hint);
    }
    const hint = picked ? describeAjvError(picked, context, request.renames) : 'the request is not valid';
    return new AppError('validation_failed', hint);
  }
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('payload_too_large', 'The request body is larger than 1 MiB (1,048,576 bytes).');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError(
        'unsupported_media_type',
        `Content-Type ${JSON.stringify(request.headers['content-type'] ?? '')} is not accepted here; send application/json.`,
      );
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError('validation_failed', 'body: the JSON body is empty; send a JSON object');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError('validation_failed', 'The Content-Length header does not match the body.');
    case 'FST_FILES_LIMIT':
      return new AppError('validation_failed', 'The upload has more than one file part: send the document as the file part "file", and "title" as a text part.');
    case 'FST_PARTS_LIMIT':
    case 'FST_FIELDS_LIMIT':
      return new AppError('validation_failed', 'The upload has too many parts: send one part "file" and at most a part "title".');
    case 'FST_PROTO_VIOLATION':
      return new AppError('validation_failed', 'A multipart part name is not allowed.');
    case 'FST_MP_PREMATURE_CLOSE':
      return new AppError('validation_failed', 'The upload ended before the multipart body was complete.');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new AppError('validation_failed', 'body: malformed JSON (or a forbidden "__proto__"/"constructor" key); send a JSON object');
    // PostgreSQL gave up on this transaction to let a conflicting one finish (a deadlock or a
    // serialisation failure): nothing was written, and the same request can simply be sent again.
    case '40P01':
    case '40001':
      return new AppError('unavailable', 'The request met a conflicting change and was not applied; send it again.');
    default:
      break;
  }
  // Before the database's test: a lost connection to the file storage has the same socket codes.
  if (storeUnavailable(err)) {
    return new AppError('unavailable', 'The file storage is busy or unreachable right now; retry in a moment.', { 'retry-after': '1' });
  }
  if (databaseUnavailable(err)) {
    return new AppError('unavailable', 'The database is busy or unreachable right now; retry in a moment.', { 'retry-after': '1' });
  }
  // Any other client error Fastify raises (a bad URL, a bad header) keeps its status class.
  const status = typeof err.statusCode === 'number' ? err.statusCode : 500;
  if (status === 404) return new AppError('not_found', 'Resource not found');
  if (status >= 400 && status < 500) return new AppError('validation_failed', `The request is not valid (${err.code ?? status}).`);
  return new AppError('internal_error', 'Something went wrong on our side. Retry later; if it persists, quote the X-Request-Id.');
}

/** Headers that describe a representation a handler had begun to send (a file): not the error's. */
const REPRESENTATION_HEADERS = ['content-type', 'content-disposition', 'content-length', 'content-range', 'accept-ranges', 'etag', 'cache-control'];

export function sendError(reply: FastifyReply, error: AppError): FastifyReply {
  // A handler may fail after it has set a file's headers (its stream failing to open): the
  // envelope goes out as JSON, whatever was set for the file.
  for (const name of REPRESENTATION_HEADERS) reply.removeHeader(name);
  for (const [name, value] of Object.entries(error.headers)) reply.header(name, value);
  return reply.code(error.status).send(errorBody(error.code, error.status, error.hint));
}

export function errorHandler(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const appError = toAppError(error, request);
  if (appError.code === 'internal_error') {
    request.log.error({ err: error, message: (error as Error).message, code: (error as { code?: string }).code }, 'request failed');
  } else if (appError.code === 'unavailable' && !(error instanceof AppError)) {
    request.log.warn({ message: (error as Error).message, code: (error as { code?: string }).code }, storeUnavailable(error) ? 'file storage unavailable' : 'database unavailable');
  }
  return sendError(reply, appError);
}
