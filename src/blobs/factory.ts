import type { Kysely } from 'kysely';
import type pg from 'pg';
import type { BlobConfig } from './config.js';
import { DiskBlobStore } from './disk.js';
import type { BlobStore } from './store.js';

export interface BlobStoreDeps {
  /** `DATA_DIR`: the disk store's root. */
  dataDir: string;
  /** The PostgreSQL database, for `postgres`. */
  db: Kysely<any>;
  /** The pool behind `db` on PostgreSQL, for `postgres` (its reads are binary `COPY`s). */
  pgPool: pg.Pool | null;
  dialect: 'sqlite' | 'postgres';
}

/**
 * The blob store that `BLOB_STORE` names. A new store is a new file beside disk.ts and one case
 * here. The S3 client is loaded only when used (it is not small).
 */
export async function createBlobStore(config: BlobConfig, deps: BlobStoreDeps): Promise<BlobStore> {
  switch (config.kind) {
    case 'disk':
      return new DiskBlobStore(deps.dataDir);
    case 'postgres': {
      if (deps.dialect !== 'postgres' || !deps.pgPool) throw new Error('BLOB_STORE=postgres needs DATABASE_URL');
      const { PostgresBlobStore } = await import('./postgres.js');
      return new PostgresBlobStore(deps.db, deps.pgPool);
    }
    case 's3': {
      const { S3BlobStore } = await import('./s3.js');
      const { kind: _kind, ...s3 } = config;
      return new S3BlobStore(s3);
    }
  }
}
