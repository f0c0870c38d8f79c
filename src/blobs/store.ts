import type { Readable, Writable } from 'node:stream';

/**
 * Stored files, addressed by the SHA-256 of their content, so that the same bytes are kept once.
 * A new file is written to a temporary place first and `commit`ted under its hash only when it
 * is complete and accepted; nothing half-written is ever visible under a hash.
 */
export interface BlobStore {
  /** A new temporary file to write; `path` is on local disk so that it can be analysed. */
  createTemp(): Promise<TempBlob>;
  /** Moves a temporary file into place under `sha256` (if that content is already stored, the temp file is dropped). */
  commit(temp: TempBlob, sha256: string): Promise<void>;
  /** The stored bytes; rejects with code `ENOENT` when there is no such blob. */
  open(sha256: string): Promise<{ stream: Readable; size: number }>;
  /** Removes a stored blob; no error when it is already gone. */
  delete(sha256: string): Promise<void>;
  /** Every stored hash (for the start-up sweep). */
  list(): AsyncIterable<{ sha256: string; modifiedAt: number }>;
  /** Removes temporary files left by processes that no longer run; returns how many. */
  sweepTemps(): Promise<number>;
}

export interface TempBlob {
  path: string;
  stream(): Writable;
  /** Removes the temporary file; safe to call twice or after `commit`. */
  discard(): Promise<void>;
}
