/**
 * Row types as stored. Both dialects store the same thing: ids and times as text (ISO 8601 UTC
 * with milliseconds, which sorts correctly as text), booleans as 0/1, JSON as text. Repositories
 * turn rows into API objects; nothing else sees these types.
 */
import type { Generated } from 'kysely';

export interface WorkspaceRow {
  id: string;
  slug: string;
  created_at: string;
  /** Bytes of revision snapshots the workspace stores (see `freeze` in revisions.ts). */
  revision_bytes: Generated<number | string>;
}

export interface ApiKeyRow {
  id: string;
  workspace_id: string;
  name: string;
  /** The first characters of the key, kept in clear to find the row and to show in listings. */
  prefix: string;
  /** SHA-256 of the whole key, hex. The key itself is never stored. */
  key_hash: string;
  /** JSON array of permission-style grants. */
  grants: string;
  expires_at: string | null;
  revoked_at: string | null;
  created_at: string;
}

export interface FormRow {
  id: string;
  workspace_id: string;
  title: string;
  description: string | null;
  status: string;
  /** JSON object, kept as the client gave it. */
  settings: string;
  current_version: number | null;
  has_unpublished_changes: number;
  deleted_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface DocumentRow {
  id: string;
  workspace_id: string;
  title: string;
  status: string;
  original_filename: string;
  file_type: string;
  mime_type: string;
  size_bytes: number;
  /** Content address of the original file in the blob store. */
  sha256: string;
  /** Content address of the PDF rendition of a DOCX, when LibreOffice made one. */
  rendition_sha256: string | null;
  page_source: string;
  page_count: number;
  /** JSON array of `{ width, height }` in points. */
  page_dimensions: string;
  current_version: number | null;
  has_unpublished_changes: number;
  deleted_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface DocumentFieldRow {
  id: string;
  document_id: string;
  label: string;
  type: string;
  page_number: number;
  x: number;
  y: number;
  width: number;
  height: number;
  is_required: number;
  is_read_only: number;
  assignee_role: string | null;
  default_value: string | null;
  direction: string;
  /** JSON object. */
  options: string;
  position: number;
  created_at: string;
  updated_at: string;
}

export interface FormSectionRow {
  id: string;
  form_id: string;
  title: string;
  description: string | null;
  position: number;
  created_at: string;
  updated_at: string;
}

export interface FormQuestionRow {
  id: string;
  form_id: string;
  section_id: string | null;
  question_text: string;
  description: string | null;
  type: string;
  is_required: number;
  is_pii: number;
  priority: string;
  context: string | null;
  /** JSON object, snake_case keys. */
  options: string;
  position: number;
  created_at: string;
  updated_at: string;
}

export interface FormRuleRow {
  id: string;
  form_id: string;
  action: string;
  target_question_id: string | null;
  target_section_id: string | null;
  match: string;
  /** JSON array of `{ sourceQuestionId, operator, value }`. */
  conditions: string;
  position: number;
  created_at: string;
  updated_at: string;
}

export interface RevisionRowBase {
  id: string;
  version: number;
  published_at: string;
  /** Id of the API key that published. */
  published_by: string;
  changes_summary: string;
  /** SHA-256 of the definition (see `definitionHash`): equal hashes mean nothing changed. */
  definition_hash: string;
  /** JSON text of the snapshot, exactly as served. */
  snapshot: string;
}

export interface FormRevisionRow extends RevisionRowBase {
  form_id: string;
}

export interface DocumentRevisionRow extends RevisionRowBase {
  document_id: string;
  sha256: string;
  rendition_sha256: string | null;
}

export interface JobRow {
  id: string;
  kind: string;
  workspace_id: string;
  document_id: string;
  /** `pending`, `processing`, `completed` or `failed`. */
  status: string;
  /** Claims so far (the one running included). */
  attempts: number;
  max_attempts: number;
  /** Not claimed before this time (backoff after a failed attempt). */
  run_at: string;
  /** The worker holding the job while `processing`, until `lease_expires_at`. */
  lease_owner: string | null;
  lease_expires_at: string | null;
  /** JSON: what the job was asked to do. */
  params: string;
  /** JSON: what it produced. */
  result: string | null;
  error_code: string | null;
  error_message: string | null;
  /** JSON: what applying its result changed. */
  applied: string | null;
  /** Pages the running attempt has read, of how many (null before its first report). */
  progress_done: number | null;
  progress_total: number | null;
  created_at: string;
  started_at: string | null;
  completed_at: string | null;
  updated_at: string;
}

/** When the job queue last gave a job of a workspace to a worker (its turn in the round-robin). */
export interface WorkspaceClaimRow {
  workspace_id: string;
  last_claimed_at: string;
}

/** A webhook endpoint (src/webhooks/); `events` is a JSON array of event names or `["*"]`. */
export interface WebhookEndpointRow {
  id: string;
  workspace_id: string;
  url: string;
  events: string;
  description: string | null;
  enabled: number;
  disabled_reason: string | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: string | null;
  failing_since: string | null;
  created_at: string;
  updated_at: string;
}

/** An event in the outbox; `payload` is the body every attempt sends, byte for byte. */
export interface WebhookEventRow {
  id: string;
  workspace_id: string;
  type: string;
  payload: string;
  created_at: string;
}

export interface WebhookDeliveryRow {
  id: string;
  workspace_id: string;
  endpoint_id: string;
  event_id: string;
  /** `pending` | `succeeded` | `failed`. */
  status: string;
  /** Queued by a person (test event, redelivery): sent even while the endpoint is disabled. */
  manual: number;
  /** Attempts made since the schedule last began (creation or redelivery): where it stands. */
  scheduled_attempts: number;
  next_attempt_at: string | null;
  lease_owner: string | null;
  lease_expires_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface WebhookAttemptRow {
  id: string;
  delivery_id: string;
  at: string;
  duration_ms: number;
  response_status: number | null;
  /** At most 1 KiB of the response body. */
  response_body: string | null;
  error: string | null;
}

/** A kept answer to a POST sent with an Idempotency-Key (src/store/idempotency.ts). */
export interface IdempotencyKeyRow {
  workspace_id: string;
  key: string;
  method: string;
  path: string;
  /** sha256 of what the request asked (query and body); an upload's is known once its file is read. */
  fingerprint: string | null;
  /** `running` or `done`. */
  state: string;
  /** A `running` row whose request has not finished by then was abandoned (a crash): a retry takes it over. */
  locked_until: string;
  response_status: number | null;
  /** JSON object of the kept headers. */
  response_headers: string | null;
  response_body: string | null;
  created_at: string;
  expires_at: string;
}

/**
 * The blob journal: a hash that may have become unreferenced, written before a blob is put (an
 * upload; removed in the transaction of the row that refers to it) or in the transaction that
 * deletes rows (a permanent delete; removed once the file is gone or found in use). An entry
 * older than the sweep's grace period was left by a crash: the sweep checks its hash again.
 */
export interface BlobCheckRow {
  id: string;
  sha256: string;
  reason: 'upload' | 'delete';
  created_at: string;
}

/**
 * The upload journal: a file being streamed into the blob store while it is received (before its
 * hash is known), written before the store gets its first byte and removed when the file is
 * committed under its hash or abandoned. `ref`: what the store needs to remove it (S3: the
 * multipart upload's id). A row older than the sweep's grace period was left by a crash.
 */
export interface BlobUploadRow {
  id: string;
  ref: string | null;
  created_at: string;
}

/** Secrets made once and shared by every process of a deployment (`download_url`: the HMAC key of signed download URLs). */
export interface ServerSecretRow {
  name: string;
  value: string;
  created_at: string;
}

export interface SchemaMigrationRow {
  id: string;
  applied_at: string;
}

export interface Database {
  workspaces: WorkspaceRow;
  api_keys: ApiKeyRow;
  forms: FormRow;
  documents: DocumentRow;
  form_sections: FormSectionRow;
  form_questions: FormQuestionRow;
  form_rules: FormRuleRow;
  document_fields: DocumentFieldRow;
  form_revisions: FormRevisionRow;
  document_revisions: DocumentRevisionRow;
  jobs: JobRow;
  workspace_claims: WorkspaceClaimRow;
  idempotency_keys: IdempotencyKeyRow;
  blob_checks: BlobCheckRow;
  blob_uploads: BlobUploadRow;
  server_secrets: ServerSecretRow;
  schema_migrations: SchemaMigrationRow;
  webhook_endpoints: WebhookEndpointRow;
  webhook_events: WebhookEventRow;
  webhook_deliveries: WebhookDeliveryRow;
  webhook_attempts: WebhookAttemptRow;
}
