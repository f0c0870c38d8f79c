import type { Kysely } from 'kysely';
import type { Readable } from 'node:stream';

/**
 * Stored files, addressed by the SHA-256 of their content, so that the same bytes are kept once.
 * A new file is received into local staging (`Staging`: it must be read and analysed before it is
 * accepted) and, where the store can, streamed into the store at the same time under an upload id
 * (`startUpload`); it becomes visible under its hash only when it is complete and accepted
 * (`BlobUpload.commit`, or `put` of the staged file); nothing half-written is ever visible under a
 * hash. Implementations: `disk.ts`, `postgres.ts`, `s3.ts`, chosen by `createBlobStore` (factory.ts).
 */
export interface BlobStore {
  readonly kind: 'disk' | 'postgres' | 's3';
  /**
   * Begins storing a file while it is received, before its hash is known: the bytes written go
   * into the store under the upload id `id`, invisible under any hash, until `commit`. The caller
   * has recorded `id` in the upload journal (`blob_uploads`) first, so that a crash leaves nothing
   * the sweep cannot find; `remember` records what else the store needs to remove the upload
   * later (S3: the multipart upload's id). `staged` is the local file the same bytes go to. `null`
   * when the store takes the staged file whole at `put` instead (disk: a rename).
   */
  startUpload(id: string, options: StartUploadOptions): BlobUpload | null;
  /**
   * Removes whatever upload `id` left in the store (`ref`: what it remembered); no error when
   * nothing is left. `db`: the transaction that holds the upload's journal row (the PostgreSQL
   * store removes its chunks in it).
   */
  discardUpload(id: string, ref: string | null, db: Kysely<any>): Promise<void>;
  /** Uploads whose bytes are in the store but not committed: for audits and tests only. */
  listUploads(): AsyncIterable<string>;
  /**
   * Stores the complete local file `file` (of `size` bytes) under `sha256`, atomically: the disk
   * store's upload, and a DOCX's PDF rendition with every store. When that content is stored
   * already the disk store replaces it with the same bytes (the same work either way), the others
   * write nothing. `file` may be moved away (the disk store renames it into place); the caller
   * discards its staged file afterwards either way.
   */
  put(file: string, sha256: string, size: number): Promise<void>;
  /**
   * Called once the staged file `file` is complete, while it is checked and before `put` is
   * asked for it (when `startUpload` gave no upload): does ahead what `put` can (disk: flushes the
   * file's data to disk, so that the sync inside `put` finds nothing left to write). `put` is
   * correct without it; a failure here is left to `put` to meet again.
   */
  prepare(file: string): Promise<void>;
  /**
   * The stored bytes, or those from `range.start` to `range.end` (inclusive) when given; `size`
   * is the whole blob's. Rejects with `BlobNotFound` when there is no such blob.
   */
  open(sha256: string, range?: ByteRange): Promise<{ stream: Readable; size: number }>;
  /** The blob's size, or `null` when it is not stored. */
  stat(sha256: string): Promise<{ size: number } | null>;
  /** Removes a stored blob; no error when it is already gone. */
  delete(sha256: string): Promise<void>;
  /** Every stored hash: for audits and tests only (the sweep reads the journal, never this). */
  list(): AsyncIterable<string>;
  /** Removes what interrupted `put`s left behind (incomplete multipart uploads) older than `olderThan` (epoch ms). */
  sweepPartial(olderThan: number): Promise<number>;
  /** A URL of the bytes that needs no key, where the store can make one itself (S3: presigned); else `null`. */
  presign(sha256: string, options: PresignOptions): Promise<string | null>;
  /** Resolves when the store answers (start-up check); rejects with a message naming the setting. */
  check(): Promise<void>;
  close(): Promise<void>;
}

export interface StartUploadOptions {
  /** The local file that receives the same bytes (read again where the store needs it: S3, a small file). */
  staged: string;
  /** Records `ref` with the upload's journal row; rejects when the row is gone (the sweep removed the upload). */
  remember(ref: string): Promise<void>;
}

/**
 * A file being streamed into the store (`BlobStore.startUpload`). `write` resolves when the next
 * chunk may come (memory bounded: a few chunks or parts per upload, whatever the file size).
 * After `end`, `commit` publishes it under its hash, or `abort` stops it; either way the caller
 * then removes the journal row (and, after `abort`, calls `discardUpload`).
 */
export interface BlobUpload {
  write(chunk: Buffer): Promise<void>;
  /** Resolves when every byte written is in the store (an S3 multipart upload completed). */
  end(): Promise<void>;
  /**
   * Makes the bytes visible under `sha256` (of `size` bytes, checked), doing the same work whether
   * or not that content is stored already (it is kept once), and removes the upload's own copy.
   * `db`: the transaction that holds the upload's journal row and the hash's lock.
   */
  commit(sha256: string, size: number, db: Kysely<any>): Promise<void>;
  /** Stops: waits for writes in flight (their errors are not reported); `discardUpload` removes what they left. */
  abort(): Promise<void>;
}

/** A write or commit of an upload that the sweep removed meanwhile (it was older than its grace period). */
export class UploadGone extends Error {
  constructor(readonly id: string) {
    super(`the upload ${id} was removed by the sweep of abandoned uploads`);
    this.name = 'UploadGone';
  }
}

export interface ByteRange {
  start: number;
  /** Inclusive. */
  end: number;
}

export interface PresignOptions {
  expiresInS: number;
  contentType: string;
  contentDisposition: string;
}

export class BlobNotFound extends Error {
  readonly code = 'ENOENT';
  constructor(readonly sha256: string) {
    super(`no stored file ${sha256}`);
    this.name = 'BlobNotFound';
  }
}

/** The mark `markStoreUnavailable` leaves on an error (a symbol: no JSON or log field shows it). */
const STORE_UNAVAILABLE = Symbol('formsign.storeUnavailable');

/**
 * Marks `error` as the file storage's own failure to answer (an object storage that cannot be
 * reached, dropped the connection, timed out or answered 5xx), so that the request that met it
 * may be sent again. The HTTP layer answers it 503 `unavailable` with the file storage named, not
 * the database.
 */
export function markStoreUnavailable(error: unknown): void {
  if (error !== null && typeof error === 'object' && Object.isExtensible(error)) Object.defineProperty(error, STORE_UNAVAILABLE, { value: true });
}

/** Whether `markStoreUnavailable` marked `error`. */
export function storeUnavailable(error: unknown): boolean {
  return error !== null && typeof error === 'object' && (error as Record<symbol, unknown>)[STORE_UNAVAILABLE] === true;
}

export const SHA256 = /^[0-9a-f]{64}$/;

export function checkHash(sha256: string): string {
  if (!SHA256.test(sha256)) throw new Error('not a SHA-256 hex digest');
  return sha256;
}
