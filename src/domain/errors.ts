import { STATUS_CODES } from 'node:http';

/** The closed set of error codes of the contract (API.md, Errors). */
export const ERROR_STATUS = {
  validation_failed: 400,
  invalid_pagination: 400,
  rule_cycle: 400,
  ai_not_configured: 400,
  missing_api_key: 401,
  invalid_api_key: 401,
  missing_grant: 403,
  invalid_signature: 403,
  not_found: 404,
  request_timeout: 408,
  invalid_status_transition: 409,
  document_not_editable: 409,
  form_not_editable: 409,
  job_not_completed: 409,
  job_already_applied: 409,
  no_changes: 409,
  idempotency_key_in_progress: 409,
  precondition_failed: 412,
  file_too_large: 413,
  payload_too_large: 413,
  unsupported_file_type: 415,
  unsupported_media_type: 415,
  range_not_satisfiable: 416,
  unreadable_document: 422,
  idempotency_key_reused: 422,
  rate_limited: 429,
  headers_too_large: 431,
  internal_error: 500,
  file_unavailable: 500,
  unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** An error meant for the client: its status follows from its code, its hint says what to do. */
export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    readonly hint: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(hint);
    this.name = 'AppError';
    this.status = ERROR_STATUS[code];
  }
}

export function reasonPhrase(status: number): string {
  return STATUS_CODES[status] ?? 'Error';
}

export const notFound = (kind: string) => new AppError('not_found', `${kind} not found`);
export const invalid = (path: string, message: string) =>
  new AppError('validation_failed', path ? `${path}: ${message}` : message);

/**
 * Socket error codes of a connection to a service (the database, the object storage) that could
 * not be made or was lost: the service was unavailable, not the request wrong.
 */
export const CONNECTION_ERRORS: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE']);
