import type { AnswerQuestions } from '../domain/answers.js';
import { ByteLru } from '../domain/byte-lru.js';
import type { CompiledLogic } from '../domain/logic.js';
import type { FormRow } from '../store/schema.js';
import { StampedCache } from './draft-cache.js';

/**
 * Compiled forms kept for `POST /evaluate`, per server, each cache up to about this many bytes of
 * the JSON they were compiled from (the objects kept are of the same order): revisions (which
 * never change) by id, drafts by form id with the stamp of the draft they were compiled from.
 */
const COMPILED_FORMS_BYTES = 64 * 1024 * 1024;

/** Bytes of form content kept as JSON for `GET /forms/{id}`, per server. */
const CONTENT_CACHE_BYTES = 64 * 1024 * 1024;

/**
 * Bytes of revision answers kept for `GET …/revisions/{version}` (the revision with its snapshot,
 * as JSON), per server. Their compressed copies (src/http/precompressed.ts) live as long as they do
 * and are not counted: a few times smaller.
 */
const REVISION_ANSWERS_BYTES = 64 * 1024 * 1024;

/** Bytes of documents' fields kept as JSON for `GET /documents/{id}`, per server. */
const DOCUMENT_FIELDS_BYTES = 64 * 1024 * 1024;

/** Bytes of completed parse jobs' answers kept for `GET …/parse-jobs/{jobId}`, per server. */
const JOB_ANSWERS_BYTES = 32 * 1024 * 1024;

/** A whole answer kept as sent (JSON) with its ETag: a revision's, a completed parse job's. */
export interface CachedAnswer {
  body: Buffer;
  etag: string;
}

/** A form's questions and show/hide logic, ready to check answers and evaluate. */
export interface Compiled {
  questions: AnswerQuestions;
  logic: CompiledLogic;
}

/** The per-server caches the use cases share (one set per `buildApp`). */
export interface Caches {
  compiledRevisions: ByteLru<Compiled>;
  compiledDrafts: StampedCache<Compiled>;
  formContent: StampedCache<{ json: Buffer; questionCount: number; row: FormRow }>;
  /** By `<kind>:<revision id>`, all of one stamp (a revision never changes). */
  revisionAnswers: StampedCache<CachedAnswer>;
  /** Documents' fields as JSON, by document id, with the stamp of the document they were read at. */
  documentFields: StampedCache<Buffer>;
  /** Completed parse jobs' answers, by job id, with the stamp of the row they were made from. */
  jobAnswers: StampedCache<CachedAnswer>;
}

export function createCaches(): Caches {
  return {
    compiledRevisions: new ByteLru<Compiled>(COMPILED_FORMS_BYTES),
    compiledDrafts: new StampedCache<Compiled>(COMPILED_FORMS_BYTES),
    formContent: new StampedCache(CONTENT_CACHE_BYTES),
    revisionAnswers: new StampedCache(REVISION_ANSWERS_BYTES),
    jobAnswers: new StampedCache(JOB_ANSWERS_BYTES),
    documentFields: new StampedCache(DOCUMENT_FIELDS_BYTES),
  };
}
