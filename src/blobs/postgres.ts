import fsp from 'node:fs/promises';
import { Readable } from 'node:stream';
import { sql, type Kysely } from 'kysely';
import { BlobNotFound, checkHash, type BlobStore, type ByteRange } from './store.js';

/** Bytes per row of `blob_chunks`: large enough for few round trips, small enough to bound memory. */
export const PG_CHUNK_BYTES = 1024 * 1024;

/**
 * Blobs in the PostgreSQL database itself (tables `blob_files` and `blob_chunks`, migration
 * 0010), so that servers on many machines need nothing but the database. A put writes the
 * file's row and its 1 MiB chunks in one transaction: nothing is visible before the commit, and
 * a crash rolls it all back. Reads fetch one chunk at a time, as the reader asks for more.
 */
export class PostgresBlobStore implements BlobStore {
  readonly kind = 'postgres';

  constructor(private readonly db: Kysely<any>) {}

  async put(file: string, sha256: string, size: number): Promise<void> {
    checkHash(sha256);
    if (await this.stat(sha256)) return;
    const handle = await fsp.open(file, 'r');
    try {
      await this.db.transaction().execute(async (trx) => {
        // A concurrent put of the same bytes waits here for the other to commit, then does nothing.
        const inserted = await sql<{ sha256: string }>`insert into blob_files (sha256, size, chunk_bytes, created_at)
          values (${sha256}, ${size}, ${PG_CHUNK_BYTES}, ${new Date().toISOString()})
          on conflict (sha256) do nothing returning sha256`.execute(trx);
        if (inserted.rows.length === 0) return;
        // One buffer for every chunk: the driver has copied a chunk into its message by the time
        // its insert answers, so the next chunk may be read into the same memory.
        const buffer = Buffer.allocUnsafe(Math.min(PG_CHUNK_BYTES, size));
        let written = 0;
        for (let seq = 0; written < size || seq === 0; seq++) {
          const length = Math.min(PG_CHUNK_BYTES, size - written);
          const { bytesRead } = await handle.read(buffer, 0, length, written);
          if (bytesRead !== length) throw new Error('the staged file is shorter than its recorded size');
          await sql`insert into blob_chunks (sha256, seq, data) values (${sha256}, ${seq}, ${buffer.subarray(0, length)})`.execute(trx);
          written += length;
          if (size === 0) break;
        }
        const { size: actual } = await handle.stat();
        if (actual !== size) throw new Error('the staged file is longer than its recorded size');
      });
    } finally {
      await handle.close();
    }
  }

  async open(sha256: string, range?: ByteRange) {
    const found = await this.row(sha256);
    if (!found) throw new BlobNotFound(sha256);
    const { size, chunkBytes } = found;
    const start = range?.start ?? 0;
    const end = range?.end ?? size - 1;
    const db = this.db;
    const fetchChunk = async (seq: number): Promise<Buffer> => {
      const result = await sql<{ data: Buffer }>`select data from blob_chunks where sha256 = ${sha256} and seq = ${seq}`.execute(db);
      const data = result.rows[0]?.data;
      if (!data) throw new BlobNotFound(sha256);
      return data;
    };
    async function* chunks(): AsyncGenerator<Buffer> {
      if (end < start) return;
      const last = Math.floor(end / chunkBytes);
      // One chunk fetched ahead while the reader takes the current one: two chunks in memory at most.
      let next: Promise<Buffer> | null = fetchChunk(Math.floor(start / chunkBytes));
      for (let seq = Math.floor(start / chunkBytes); seq <= last; seq++) {
        const data = await next!;
        next = seq < last ? fetchChunk(seq + 1) : null;
        // An error of the one fetched ahead surfaces when it is awaited, not as an unhandled rejection.
        next?.catch(() => {});
        const offset = seq * chunkBytes;
        yield data.subarray(Math.max(0, start - offset), Math.min(data.length, end - offset + 1));
      }
    }
    return { stream: Readable.from(chunks(), { objectMode: false, highWaterMark: 1 }), size };
  }

  async stat(sha256: string) {
    const found = await this.row(sha256);
    return found ? { size: found.size } : null;
  }

  private async row(sha256: string): Promise<{ size: number; chunkBytes: number } | null> {
    checkHash(sha256);
    const result = await sql<{ size: string | number; chunk_bytes: number }>`select size, chunk_bytes from blob_files where sha256 = ${sha256}`.execute(this.db);
    const row = result.rows[0];
    return row ? { size: Number(row.size), chunkBytes: Number(row.chunk_bytes) } : null;
  }

  async delete(sha256: string): Promise<void> {
    checkHash(sha256);
    // The chunks go with it (on delete cascade).
    await sql`delete from blob_files where sha256 = ${sha256}`.execute(this.db);
  }

  async *list(): AsyncIterable<string> {
    const result = await sql<{ sha256: string }>`select sha256 from blob_files order by sha256`.execute(this.db);
    for (const row of result.rows) yield row.sha256;
  }

  /** A put is one transaction: nothing of an interrupted one remains. */
  async sweepPartial(): Promise<number> {
    return 0;
  }

  async presign(): Promise<null> {
    return null;
  }

  async check(): Promise<void> {
    await sql`select 1 from blob_files limit 1`.execute(this.db);
  }

  async close(): Promise<void> {}
}
