import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { createStore, type Store } from '../../src/store/db.js';
import { createTestDatabase, TEST_DB, type TestDatabase } from '../helpers/context.js';
import { startDatabaseRelay, type DatabaseRelay } from '../helpers/net.js';

const skip = TEST_DB === 'postgres' ? false : 'needs PostgreSQL (FORMSIGN_TEST_DB=postgres)';

/**
 * The network to PostgreSQL goes while a query runs (a failover, a restart, a dropped link):
 * node-postgres ends every query of that connection and emits `error` on its client. A client
 * the pool has lent out has no listener of the pool's then; without the store's own, that event
 * would end the process and every request in it. The link is a TCP proxy here, cut by the test.
 */
describe('the connection to PostgreSQL is lost in the middle of a query', { skip }, () => {
  let database: TestDatabase;
  let relay: DatabaseRelay;
  let store: Store;

  before(async () => {
    database = await createTestDatabase();
    relay = await startDatabaseRelay(database.location.databaseUrl!);
    store = createStore({ databaseUrl: relay.url, sqlitePath: '' });
  });
  after(async () => {
    await store.close();
    await relay.close();
    await database.drop();
  });

  /** Cuts every link once PostgreSQL runs the `pg_sleep` (asked through another, direct connection). */
  async function cutWhenBusy(): Promise<void> {
    const direct = new pg.Client({ connectionString: database.location.databaseUrl! });
    await direct.connect();
    try {
      for (let i = 0; ; i++) {
        const { rows } = await direct.query(`select 1 from pg_stat_activity where datname = current_database() and state = 'active' and query like '%pg_sleep(30)%' and pid <> pg_backend_pid()`);
        if (rows.length > 0) break;
        if (i === 400) throw new Error('the query never ran');
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    } finally {
      await direct.end();
    }
    relay.cut();
  }

  it('fails the queries on it; the process lives on, and the store serves again on a new connection', async () => {
    const running = sql`select pg_sleep(30)`.execute(store.db);
    running.catch(() => {});
    await cutWhenBusy();
    await assert.rejects(running, /terminated|ECONNRESET|closed/i);
    const { rows } = await sql<{ one: number }>`select 1 as one`.execute(store.db);
    assert.equal(rows[0]!.one, 1);
  });

  it('the same for a client taken from the pool directly (the blob store\'s COPY)', async () => {
    const client = await store.pgPool!.connect();
    const running = client.query(`copy (select pg_sleep(30)) to stdout`);
    running.catch(() => {});
    await cutWhenBusy();
    await assert.rejects(running, /terminated|ECONNRESET|closed/i);
    client.release(new Error('lost'));
    const { rows } = await sql<{ one: number }>`select 1 as one`.execute(store.db);
    assert.equal(rows[0]!.one, 1);
  });
});
