import type { Readable } from 'node:stream';

/**
 * Stored files, addressed by the SHA-256 of their content, so that the same bytes are kept once.
 * A new file is received into local staging first (`Staging`, beside the store: it must be read
 * and analysed before it is accepted) and `put` under its hash only when it is complete and
 * accepted; nothing half-written is ever visible under a hash. Implementations: `disk.ts`,
 * `postgres.ts`, `s3.ts`, chosen by `createBlobStore` (factory.ts).
 */
export interface BlobStore {
  readonly kind: 'disk' | 'postgres' | 's3';
  /**
   * Stores the complete local file `file` (of `size` bytes) under `sha256`, atomically; when that
   * content is stored already, nothing is written. `file` may be moved away (the disk store
   * renames it into place); the caller discards its staged file afterwards either way.
   */
  put(file: string, sha256: string, size: number): Promise<void>;
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

export const SHA256 = /^[0-9a-f]{64}$/;

export function checkHash(sha256: string): string {
  if (!SHA256.test(sha256)) throw new Error('not a SHA-256 hex digest');
  return sha256;
}
