import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { PostgresBlobStore } from '../../src/blobs/postgres.js';
import { migrate } from '../../src/store/migrations.js';
import { createTestDatabase, TEST_DB, type TestDatabase } from '../helpers/context.js';

const skip = TEST_DB === 'postgres' ? false : 'the postgres blob store needs PostgreSQL (FORMSIGN_TEST_DB=postgres)';

describe('migration 0013: files stored in PostgreSQL before streamed uploads stay readable', { skip }, () => {
  let database: TestDatabase;

  before(async () => {
    database = await createTestDatabase();
  });
  after(() => database.drop());

  it('keeps their chunks (keyed by their hash, now their upload id) without rewriting them; read, ranged and deleted as before', async () => {
    const db = database.store.db;
    // The schema as migration 0010 left it, and forget 0013 ran.
    await sql`drop table blob_uploads`.execute(db);
    await sql`drop index blob_files_upload_id`.execute(db);
    await sql`alter table blob_files drop column upload_id`.execute(db);
    await sql`alter table blob_chunks rename column upload_id to sha256`.execute(db);
    await sql`alter table blob_chunks add foreign key (sha256) references blob_files (sha256) on delete cascade`.execute(db);
    await sql`delete from schema_migrations where id = '0013_blob_uploads'`.execute(db);
    // A 2.5 MiB file written the way the earlier store did: its row, then 1 MiB chunks under its hash.
    const bytes = crypto.randomBytes(2.5 * 1024 * 1024);
    const sha = crypto.createHash('sha256').update(bytes).digest('hex');
    await sql`insert into blob_files (sha256, size, chunk_bytes, created_at) values (${sha}, ${bytes.length}, ${1024 * 1024}, ${new Date().toISOString()})`.execute(db);
    for (let seq = 0; seq * 1024 * 1024 < bytes.length; seq++) {
      await sql`insert into blob_chunks (sha256, seq, data) values (${sha}, ${seq}, ${bytes.subarray(seq * 1024 * 1024, (seq + 1) * 1024 * 1024)})`.execute(db);
    }

    assert.deepEqual(await migrate(database.store), ['0013_blob_uploads']);
    const blobs = new PostgresBlobStore(db, database.store.pgPool!);
    const read = async (range?: { start: number; end: number }) => {
      const { stream, size } = await blobs.open(sha, range);
      const chunks: Buffer[] = [];
      for await (const chunk of stream) chunks.push(chunk as Buffer);
      return { bytes: Buffer.concat(chunks), size };
    };
    assert.ok((await read()).bytes.equals(bytes));
    assert.ok((await read({ start: 1024 * 1024 - 2, end: 2 * 1024 * 1024 + 1 })).bytes.equals(bytes.subarray(1024 * 1024 - 2, 2 * 1024 * 1024 + 2)));
    const listed: string[] = [];
    for await (const s of blobs.list()) listed.push(s);
    assert.deepEqual(listed, [sha]);
    const uploads: string[] = [];
    for await (const u of blobs.listUploads()) uploads.push(u);
    assert.deepEqual(uploads, [], 'its chunks are a file\'s, not an upload\'s');
    await blobs.delete(sha);
    assert.equal(await blobs.stat(sha), null);
    assert.equal(Number((await sql<{ n: string }>`select count(*) as n from blob_chunks`.execute(db)).rows[0]!.n), 0, 'its chunks went with it');
  });
});
