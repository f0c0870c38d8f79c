import crypto from 'node:crypto';
import fsp from 'node:fs/promises';
import { Readable } from 'node:stream';
import { sql, type Kysely } from 'kysely';
import type pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { PieceSender } from './pieces.js';
import { BlobNotFound, checkHash, UploadGone, type BlobStore, type BlobUpload, type ByteRange } from './store.js';

/**
 * Bytes per row of `blob_chunks` for the files written now (`blob_files.chunk_bytes`): a row this
 * size is stored in its table's page as it is (migration 0014 sets the table's
 * `toast_tuple_target` to 8160), not cut into about 525 TOAST rows of 2 KB with an index entry
 * each, as a 1 MiB row was. PostgreSQL then takes about half the CPU for an upload (a quarter
 * for a bare `COPY` of the same bytes; bench/README.md, "Stored files"). Files written before
 * keep their 1 MiB rows and are read as they are.
 */
export const PG_ROW_BYTES = 8000;
/** Rows written by one `COPY` in one short transaction, and read by one `COPY`. */
const ROWS_PER_PIECE = 131;
/** Bytes written, and read, at once: 131 rows, about 1 MiB. */
export const PG_PIECE_BYTES = PG_ROW_BYTES * ROWS_PER_PIECE;

/**
 * Blobs in the PostgreSQL database itself, so that servers on many machines need nothing but the
 * database: `blob_chunks` holds the bytes in rows of 8,000 bytes (1 MiB for files written before
 * migration 0014; `blob_files.chunk_bytes` says which) under an upload id, `blob_files` maps a
 * content hash to the upload id whose rows are its bytes (migrations 0010, 0013 and 0014).
 *
 * An upload streams its chunks (131 rows, about 1 MiB) while the request body arrives, each in a
 * short transaction of its own (no transaction lasts as long as the client takes), under the
 * upload's journal row in `blob_uploads`: a chunk is written only while that row exists (it is
 * read `for share`), so that once the sweep has removed an abandoned upload's row and chunks,
 * nothing can add to them. The chunks are written with `synchronous_commit = off`: the commit of
 * the `blob_files` row that makes them visible is synchronous, and WAL is flushed in order, so a
 * file whose row survived a crash has all its chunks. Nothing is visible under a hash before that
 * one row.
 *
 * Reads fetch about 1 MiB of rows at a time, as the reader asks for more, by a binary `COPY … TO
 * STDOUT` on a client of the pool behind `db`: a `select` would bring the bytes as hex text for
 * the driver to decode (about 3 times the time and 5 times this process's CPU of the copy,
 * bench/README.md).
 */
export class PostgresBlobStore implements BlobStore {
  readonly kind = 'postgres';

  constructor(
    private readonly db: Kysely<any>,
    private readonly pool: pg.Pool,
  ) {}

  startUpload(id: string): BlobUpload {
    return new PostgresUpload(this.pool, id);
  }

  async discardUpload(id: string, _ref: string | null, db: Kysely<any>): Promise<void> {
    // Never the chunks of a committed file (its row and the journal row's removal commit together).
    await sql`delete from blob_chunks where upload_id = ${id} and not exists (select 1 from blob_files where upload_id = ${id})`.execute(db);
  }

  async *listUploads(): AsyncIterable<string> {
    const result = await sql<{ upload_id: string }>`select distinct upload_id from blob_chunks c
      where not exists (select 1 from blob_files f where f.upload_id = c.upload_id) order by upload_id`.execute(this.db);
    for (const row of result.rows) yield row.upload_id;
  }

  /** Nothing: uploads stream into the database as they are received (`startUpload`). */
  async prepare(): Promise<void> {}

  /**
   * A whole local file in one transaction (a DOCX's PDF rendition, made after the upload): its
   * chunks under an id of its own and the `blob_files` row commit together.
   */
  async put(file: string, sha256: string, size: number): Promise<void> {
    checkHash(sha256);
    if (await this.stat(sha256)) return;
    const handle = await fsp.open(file, 'r');
    const uploadId = `put-${crypto.randomUUID()}`;
    try {
      await this.db.transaction().execute(async (trx) => {
        // A concurrent put of the same bytes waits here for the other to commit, then does nothing.
        if (!(await insertFileRow(trx, sha256, size, uploadId))) return;
        // One buffer for every piece: the driver has copied a piece into its message by the time
        // its insert answers, so the next piece may be read into the same memory. PostgreSQL cuts
        // each piece into its rows.
        const buffer = Buffer.allocUnsafe(Math.min(PG_PIECE_BYTES, size));
        for (let piece = 0, written = 0; written < size; piece++) {
          const length = Math.min(PG_PIECE_BYTES, size - written);
          const { bytesRead } = await handle.read(buffer, 0, length, written);
          if (bytesRead !== length) throw new Error('the staged file is shorter than its recorded size');
          // The rows as `copyRows` cuts a streamed chunk (Kysely has no COPY for this transaction).
          await sql`insert into blob_chunks (upload_id, seq, data)
            select ${uploadId}::text, ${piece * ROWS_PER_PIECE}::integer + i, substring(${buffer.subarray(0, length)}::bytea from i * ${PG_ROW_BYTES}::integer + 1 for ${PG_ROW_BYTES}::integer)
            from generate_series(0, ${Math.ceil(length / PG_ROW_BYTES) - 1}::integer) as i`.execute(trx);
          written += length;
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
    const { size, chunkBytes, uploadId } = found;
    const start = range?.start ?? 0;
    const end = range?.end ?? size - 1;
    const pool = this.pool;
    // Rows fetched by one COPY: about 1 MiB of them (one row of a file with 1 MiB rows).
    const perRead = Math.max(1, Math.floor(PG_PIECE_BYTES / chunkBytes));
    const first = Math.floor(start / chunkBytes);
    const last = Math.floor(end / chunkBytes);
    // The bytes of rows `from` on (one read), in one buffer: every row but a file's last is whole.
    const fetchRows = async (from: number): Promise<Buffer> => {
      const to = Math.min(last, from + perRead - 1);
      const rows = await readRows(pool, uploadId, from, to);
      if (rows.length !== to - from + 1) throw new BlobNotFound(sha256);
      return rows.length === 1 ? rows[0]! : Buffer.concat(rows);
    };
    async function* chunks(): AsyncGenerator<Buffer> {
      if (end < start) return;
      // One read fetched ahead while the reader takes the current one: two in memory at most.
      let next: Promise<Buffer> | null = fetchRows(first);
      for (let from = first; from <= last; from += perRead) {
        const data = await next!;
        next = from + perRead <= last ? fetchRows(from + perRead) : null;
        // An error of the one fetched ahead surfaces when it is awaited, not as an unhandled rejection.
        next?.catch(() => {});
        const offset = from * chunkBytes;
        yield data.subarray(Math.max(0, start - offset), Math.min(data.length, end - offset + 1));
      }
    }
    return { stream: Readable.from(chunks(), { objectMode: false, highWaterMark: 1 }), size };
  }

  async stat(sha256: string) {
    const found = await this.row(sha256);
    return found ? { size: found.size } : null;
  }

  private async row(sha256: string): Promise<{ size: number; chunkBytes: number; uploadId: string } | null> {
    checkHash(sha256);
    const result = await sql<{ size: string | number; chunk_bytes: number; upload_id: string }>`select size, chunk_bytes, upload_id from blob_files where sha256 = ${sha256}`.execute(this.db);
    const row = result.rows[0];
    return row ? { size: Number(row.size), chunkBytes: Number(row.chunk_bytes), uploadId: row.upload_id } : null;
  }

  async delete(sha256: string): Promise<void> {
    checkHash(sha256);
    // The file's row and its chunks in one statement.
    await sql`with gone as (delete from blob_files where sha256 = ${sha256} returning upload_id)
      delete from blob_chunks where upload_id in (select upload_id from gone)`.execute(this.db);
  }

  async *list(): AsyncIterable<string> {
    const result = await sql<{ sha256: string }>`select sha256 from blob_files order by sha256`.execute(this.db);
    for (const row of result.rows) yield row.sha256;
  }

  /** Nothing: a put is one transaction, and the chunks of an abandoned upload are found through the upload journal. */
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

/**
 * The `blob_files` row that makes the rows of `uploadId` the bytes of `sha256` (of `PG_ROW_BYTES`
 * each); false, and nothing written, when the hash has a row already.
 */
async function insertFileRow(db: Kysely<any>, sha256: string, size: number, uploadId: string): Promise<boolean> {
  const inserted = await sql<{ sha256: string }>`insert into blob_files (sha256, size, chunk_bytes, upload_id, created_at)
    values (${sha256}, ${size}, ${PG_ROW_BYTES}, ${uploadId}, ${new Date().toISOString()})
    on conflict (sha256) do nothing returning sha256`.execute(db);
  return inserted.rows.length === 1;
}

/** The 11 bytes that open PostgreSQL's binary `COPY` format. */
const COPY_SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
/** The field count of -1 that ends a binary `COPY`. */
const COPY_TRAILER = Buffer.from([0xff, 0xff]);
/** The protocol's CopyDone message. */
const COPY_DONE = Buffer.from([0x63, 0, 0, 0, 4]);

/**
 * The bytes of rows `from` to `to` of an upload, in order (fewer when rows are missing): a binary
 * `COPY` of those rows, on a client held only for it (a slow reader holds no connection between
 * reads).
 */
async function readRows(pool: pg.Pool, uploadId: string, from: number, to: number): Promise<Buffer[]> {
  for (const seq of [from, to]) if (!Number.isSafeInteger(seq) || seq < 0) throw new Error(`bad row number ${seq}`);
  const client = await pool.connect();
  let failed: Error | undefined;
  try {
    // COPY takes no parameters: the id goes in as a literal, escaped by the driver.
    const stream = client.query(
      copyTo(`copy (select data from blob_chunks where upload_id = ${client.escapeLiteral(uploadId)} and seq between ${from} and ${to} order by seq) to stdout (format binary)`),
    );
    const parts: Buffer[] = [];
    for await (const part of stream) parts.push(part as Buffer);
    return copiedByteas(Buffer.concat(parts));
  } catch (error) {
    failed = error as Error;
    throw error;
  } finally {
    // A client whose COPY failed midway goes; the pool opens another.
    client.release(failed);
  }
}

/**
 * The values of a binary `COPY` of one non-null `bytea` column, in order (views into `copy`): the
 * signature, flags and header extension; then each row (a field count of 1, the value's length,
 * its bytes); then the trailer (a field count of -1) and nothing after it.
 */
export function copiedByteas(copy: Buffer): Buffer[] {
  const malformed = () => new Error('malformed binary COPY from PostgreSQL');
  // Flags: bits 16–31 are critical (bit 16: an OID in each row, not asked for; the others not
  // defined) and refused; bits 0–15 are compatible changes, ignored as PostgreSQL's docs say.
  if (copy.length < 21 || !copy.subarray(0, 11).equals(COPY_SIGNATURE) || (copy.readUInt32BE(11) & 0xffff0000) !== 0) throw malformed();
  let at = 19 + copy.readUInt32BE(15);
  const values: Buffer[] = [];
  for (;;) {
    if (at + 2 > copy.length) throw malformed();
    const fields = copy.readInt16BE(at);
    if (fields === -1) {
      if (at + 2 !== copy.length) throw malformed();
      return values;
    }
    if (fields !== 1 || at + 6 > copy.length) throw malformed();
    const length = copy.readInt32BE(at + 2);
    at += 6;
    if (length < 0 || at + length > copy.length) throw malformed();
    values.push(copy.subarray(at, at + length));
    at += length;
  }
}

/**
 * Writes `data` as rows of `blob_chunks` of `PG_ROW_BYTES` each (the last shorter), numbered from
 * `firstSeq`, by one binary `COPY … FROM STDIN` (in the caller's transaction): the signature,
 * flags and an empty header extension; per row three fields (the upload id as text, the number as
 * a 4-byte integer, the bytes: a view into `data`, not a copy); the trailer.
 */
async function copyRows(client: pg.PoolClient, uploadId: string, firstSeq: number, data: Buffer): Promise<void> {
  const id = Buffer.from(uploadId, 'utf8');
  const count = Math.ceil(data.length / PG_ROW_BYTES);
  const rowHead = 2 + 4 + id.length + 4 + 4 + 4;
  const heads = Buffer.alloc(19 + count * rowHead);
  COPY_SIGNATURE.copy(heads, 0); // then flags and extension length: zero
  const pieces: Buffer[] = [];
  for (let k = 0, headAt = 19; k < count; k++) {
    const start = headAt;
    let at = heads.writeInt16BE(3, headAt);
    at = heads.writeInt32BE(id.length, at);
    at += id.copy(heads, at);
    at = heads.writeInt32BE(4, at);
    at = heads.writeInt32BE(firstSeq + k, at);
    const row = data.subarray(k * PG_ROW_BYTES, (k + 1) * PG_ROW_BYTES);
    headAt = heads.writeInt32BE(row.length, at);
    // The file's signature goes out with the first row's head.
    pieces.push(heads.subarray(k === 0 ? 0 : start, headAt), row);
  }
  if (count === 0) pieces.push(heads.subarray(0, 19));
  pieces.push(COPY_TRAILER);
  const copy = new CopyIn('copy blob_chunks (upload_id, seq, data) from stdin (format binary)', pieces);
  client.query(copy);
  const rows = await copy.done;
  if (rows !== count) throw new Error(`COPY wrote ${rows} rows, not ${count}, from row ${firstSeq} of upload ${uploadId}`);
}

/**
 * A `COPY … FROM STDIN` of bytes known in full, as a query object the driver runs in its turn
 * (node-postgres's `Submittable`): when the server asks for the data, every byte is handed to the
 * socket at once (the buffers themselves, no copy), then CopyDone; `done` answers the rows
 * written. Nothing is left for this object to write later: after an error answered midway, what
 * the socket still holds reaches the server, which discards it.
 * (pg-copy-streams' writable waits for the socket's `drain` to send the rest, and writes through
 * a connection it has cleared after an error: brianc/node-pg-copy-streams#171.) A client whose
 * COPY failed is released as broken by the caller.
 */
class CopyIn implements pg.Submittable {
  readonly done: Promise<number>;
  /** Set by the driver when the connection has a `query_timeout`: called when the query ends, it clears that timer. */
  callback?: (error: Error | null) => void;
  private answer!: { resolve: (rows: number) => void; reject: (error: Error) => void };
  private rows = -1;

  constructor(
    private readonly text: string,
    private pieces: Buffer[],
  ) {
    this.done = new Promise((resolve, reject) => (this.answer = { resolve, reject }));
  }

  submit(connection: pg.Connection): void {
    connection.query(this.text);
  }

  handleCopyInResponse(connection: pg.Connection): void {
    const socket = connection.stream;
    // Ending already: its 'close' fails this query.
    if (!socket.writable) return;
    const length = this.pieces.reduce((sum, piece) => sum + piece.length, 0);
    const header = Buffer.alloc(5);
    header[0] = 0x64; // CopyData
    header.writeUInt32BE(length + 4, 1);
    // Corked: one write of all the pieces, not a packet for the 5-byte header.
    socket.cork();
    socket.write(header);
    for (const piece of this.pieces) socket.write(piece);
    socket.write(COPY_DONE);
    socket.uncork();
    this.pieces = [];
  }

  handleCommandComplete(message: { text: string }): void {
    const match = /^COPY (\d+)$/.exec(message.text);
    this.rows = match ? Number(match[1]) : -1;
  }

  /** An error answered (the server's, or the connection's end): this query is over. */
  handleError(error: Error): void {
    this.callback?.(error);
    this.answer.reject(error);
  }

  handleReadyForQuery(): void {
    this.callback?.(null);
    this.answer.resolve(this.rows);
  }

  // Not sent in answer to a COPY FROM; here so that an unexpected message is no crash.
  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyData(): void {}
}

/** Chunk writes in flight per upload: PostgreSQL writes one while this process receives the next. */
const CHUNKS_IN_FLIGHT = 2;

/**
 * The chunks of one upload, written while it is received: a chunk of about 1 MiB (131 rows) is
 * filled while earlier ones are written (`PieceSender`), so that receiving and writing overlap and
 * at most three chunks of the file are in this process's memory (the socket writes them from
 * there).
 */
class PostgresUpload implements BlobUpload {
  private readonly pieces: PieceSender;
  private ending: Promise<void> | null = null;
  /** Rows and bytes whose `COPY` answered and whose transaction committed. */
  private readonly stored = { rows: 0, bytes: 0 };

  constructor(
    private readonly pool: pg.Pool,
    private readonly id: string,
  ) {
    this.pieces = new PieceSender(PG_PIECE_BYTES, CHUNKS_IN_FLIGHT, (data, index) => this.insert(index, data));
  }

  write(chunk: Buffer): Promise<void> {
    return this.pieces.write(chunk);
  }

  /**
   * One short transaction per chunk, asynchronous commit (see the class above); written only
   * while the upload's journal row exists, which it holds `for share` until it commits. The row
   * go in by a binary `COPY`: the chunk's bytes are written to the socket as they are, with no
   * parameter message built around them.
   */
  private async insert(index: number, data: Buffer): Promise<void> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    try {
      await client.query('begin; set local synchronous_commit = off');
      const journal = await client.query('select 1 from blob_uploads where id = $1 for share', [this.id]);
      if (journal.rowCount !== 1) throw new UploadGone(this.id);
      await copyRows(client, this.id, index * ROWS_PER_PIECE, data);
      await client.query('commit');
      this.stored.rows += Math.ceil(data.length / PG_ROW_BYTES);
      this.stored.bytes += data.length;
    } catch (error) {
      if (error instanceof UploadGone) {
        // Nothing written: the transaction ends and the client serves again (unless it cannot).
        await client.query('rollback').catch((rollbackError: Error) => {
          broken = rollbackError;
        });
      } else {
        // Anything else (the COPY, the connection): the client goes, the pool opens another.
        broken = error as Error;
      }
      throw error;
    } finally {
      client.release(broken);
    }
  }

  end(): Promise<void> {
    this.ending ??= this.pieces.flush();
    return this.ending;
  }

  async commit(sha256: string, size: number, db: Kysely<any>): Promise<void> {
    checkHash(sha256);
    if (this.pieces.bytes !== size) throw new Error(`the upload received ${this.pieces.bytes} bytes, not ${size}`);
    // Every chunk but the last is whole (131 rows), so the rows are the size's. Counted as each
    // chunk committed, not read back here (a scan of the upload's rows, 40–75 ms for 50 MB, inside
    // the transaction that holds the hash's lock): the rows cannot have gone since, because only
    // the removal of the upload's journal row takes them, in one transaction with it, and this
    // commit has just taken that row (`commitUpload`).
    if (this.stored.rows !== Math.ceil(size / PG_ROW_BYTES) || this.stored.bytes !== size) {
      throw new Error(`the stored rows of upload ${this.id} are not the ${size} bytes received`);
    }
    // The hash's lock is held (withCommittedBlobs): no other commit of these bytes runs meanwhile.
    // Stored already: this upload's copy goes (the content is kept once).
    if (!(await insertFileRow(db, sha256, size, this.id))) await sql`delete from blob_chunks where upload_id = ${this.id}`.execute(db);
  }

  async abort(): Promise<void> {
    await this.ending?.catch(() => {});
    await this.pieces.stop();
  }
}
