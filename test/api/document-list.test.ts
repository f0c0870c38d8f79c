import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import http from 'node:http';
import type { Readable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { sql, type KyselyPlugin } from 'kysely';
import { newId } from '../../src/domain/ids.js';
import { documentListAnswer } from '../../src/http/document-answer.js';
import { LIST_STEP_PAGES, LIST_STREAMS, ListStreams } from '../../src/http/list-streams.js';
import type { RouteDeps } from '../../src/http/route-deps.js';
import { DownloadSigner } from '../../src/blobs/download-url.js';
import { listDocuments } from '../../src/store/documents.js';
import { bearer, createTestContext, TEST_DB, type TestContext } from '../helpers/context.js';
import { makePdf, multipart } from '../helpers/files.js';

const ALL = ['documents:read', 'documents:write', 'documents:delete'];

/** A page sizes array of `pages` pages, the first of which is `width` wide (so that each document's is its own). */
const pageSizes = (pages: number, width: number) => JSON.stringify(Array.from({ length: pages }, (_, i) => ({ width: i === 0 ? width : 612, height: 792 })));

/**
 * `GET /documents` writes each document with its page sizes as stored, read a step of
 * `LIST_STEP_PAGES` pages at a time; a list of more pages than one step is streamed, at most
 * `LIST_STREAMS.perWorkspace` at once per workspace (docs/decisions.md, "Lists of very long documents").
 */
describe('listing long documents', () => {
  let ctx: TestContext;
  let headers: Record<string, string>;
  let workspace: string;
  const now = Date.parse('2026-12-03T12:00:00.000Z');

  before(async () => {
    ctx = await createTestContext({ now: () => now });
    workspace = `ws_${newId()}`;
    headers = bearer(await ctx.key(ALL, workspace));
  });
  after(() => ctx.close());

  const list = (query: string, extra: Record<string, string> = {}, h = headers) => ctx.app.inject({ method: 'GET', url: `/api/v1/documents${query}`, headers: { ...h, ...extra } });

  /** Uploads a one-page PDF, then copies its row `copies` times with `pages` pages each (as a long upload would store them); ids newest first. */
  async function longDocuments(copies: number, pages: number, h = headers): Promise<string[]> {
    const body = multipart([{ name: 'file', data: await makePdf([{ width: 612, height: 792 }]), filename: 'long.pdf' }]);
    const res = await ctx.app.inject({ method: 'POST', url: '/api/v1/documents', headers: { ...h, ...body.headers }, payload: body.payload });
    assert.equal(res.statusCode, 201, res.body);
    const row = await ctx.store.db.selectFrom('documents').selectAll().where('id', '=', res.json().data.id).executeTakeFirstOrThrow();
    const ids: string[] = [];
    for (let i = 0; i < copies; i++) {
      const id = newId();
      const created = new Date(Date.parse(row.created_at) + 1000 * (i + 1)).toISOString();
      await ctx.store.db.insertInto('documents').values({ ...row, id, page_count: pages, page_dimensions: pageSizes(pages, 100 + ids.length), created_at: created, updated_at: created }).execute();
      ids.unshift(id);
    }
    return ids;
  }

  /** A new workspace holding `copies` documents of 10,000 pages (and the upload they were copied from); its id. */
  async function longWorkspace(copies: number): Promise<string> {
    const slug = `ws_${newId()}`;
    await longDocuments(copies, 10_000, bearer(await ctx.key(ALL, slug)));
    return (await ctx.store.db.selectFrom('workspaces').select('id').where('slug', '=', slug).executeTakeFirstOrThrow()).id;
  }

  /**
   * `documentListAnswer` called as the route does, with `lists` and `db` of the test's own, and an
   * answer that counts being cut (destroying it closes it, as Node's does).
   */
  async function directList(lists: ListStreams, workspaceId: string, db = ctx.store.db) {
    const deps = { lists, downloads: { signer: new DownloadSigner(Buffer.alloc(32, 7)), publicBaseUrl: 'https://example.test', expiresS: 900 }, blobs: ctx.blobs, clock: { now: () => now } } as unknown as RouteDeps;
    const raw = Object.assign(new EventEmitter(), { cuts: 0, destroy: () => (raw.cuts++, raw.emit('close')) });
    const { items, total } = await listDocuments(ctx.store.db, workspaceId, {}, { limit: 100, offset: 0 });
    const answer = await documentListAnswer(deps, { protocol: 'https', host: 'example.test' } as never, { raw } as never, db, workspaceId, items, { total, page: 1, limit: 100 });
    assert.equal(typeof answer, 'object', 'streamed');
    return { stream: answer as Readable, raw };
  }

  it('streams a list of more pages than one step, each document as read alone, in order and compressed as accepted', async () => {
    // Runs of 10,000 + 10,000 pages, 10,000 + 10,000, then 10,000 and the one-page upload.
    const ids = await longDocuments(5, 10_000);
    assert.ok(5 * 10_000 > 2 * LIST_STEP_PAGES);
    const res = await list('?limit=100');
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers['content-length'], undefined, 'streamed, not made whole first');
    assert.match(String(res.headers['content-type']), /^application\/json/);
    const body = res.json();
    assert.deepEqual(body.meta, { total: 6, page: 1, limit: 100 });
    assert.deepEqual(body.data.slice(0, 5).map((d: { id: string }) => d.id), ids);
    for (const [i, item] of body.data.entries()) {
      const alone = await ctx.app.inject({ method: 'GET', url: `/api/v1/documents/${item.id}`, headers });
      const { fields: _fields, ...document } = alone.json().data;
      assert.deepEqual(item, document, `document ${i} as read alone`);
    }
    assert.equal(body.data[0].pageDimensions.length, 10_000);
    assert.deepEqual(body.data[0].pageDimensions[0], { width: 104, height: 792 });
    assert.deepEqual(body.data[4].pageDimensions[0], { width: 100, height: 792 });
    const [br, gzip] = await Promise.all([list('?limit=100', { 'accept-encoding': 'br' }), list('?limit=100', { 'accept-encoding': 'gzip' })]);
    assert.equal(br.headers['content-encoding'], 'br');
    assert.equal(gzip.headers['content-encoding'], 'gzip');
    assert.equal(zlib.brotliDecompressSync(br.rawPayload).toString(), res.body);
    assert.equal(zlib.gunzipSync(gzip.rawPayload).toString(), res.body);
    const head = await ctx.app.inject({ method: 'HEAD', url: '/api/v1/documents?limit=100', headers });
    assert.equal(head.statusCode, 200);
    assert.equal(head.body, '');
    // A page of one step is answered whole, the same documents as in the stream.
    const short = await list('?limit=2&page=2');
    assert.equal(short.statusCode, 200);
    assert.ok(Number(short.headers['content-length']) > 0);
    assert.deepEqual(short.json().data, body.data.slice(2, 4));
    // Soft-deleted documents leave the list; a stranger sees none of them.
    const deleted = await ctx.app.inject({ method: 'DELETE', url: `/api/v1/documents/${ids[1]}`, headers });
    assert.equal(deleted.statusCode, 200, deleted.body);
    const after = (await list('?limit=100')).json();
    assert.deepEqual(after.data.map((d: { id: string }) => d.id), body.data.map((d: { id: string }) => d.id).filter((id: string) => id !== ids[1]));
    assert.equal(after.meta.total, 5);
    const stranger = await list('?limit=100', {}, bearer(await ctx.key(['documents:read'])));
    assert.deepEqual(stranger.json(), { success: true, data: [], meta: { total: 0, page: 1, limit: 100 } });
  });

  it('keeps page sizes out of the row columns SQLite reads for a list: the column is stored last', { skip: TEST_DB === 'postgres' ? 'PostgreSQL keeps long values out of the row (TOAST)' : false }, async () => {
    const columns = (await sql<{ name: string }>`select name from pragma_table_info('documents') order by cid`.execute(ctx.store.db)).rows.map((c) => c.name);
    assert.equal(columns.at(-1), 'page_dimensions');
  });

  it('keeps the slot of a list given up until its step has settled, that step reading nothing, so that the lists after it arrive whole', async () => {
    const own = await longWorkspace(5);
    // Every query of this database takes 100 ms more, so that a list is given up with its step
    // waiting or running; the page sizes read are counted.
    let sizesRead = 0;
    const slow: KyselyPlugin = {
      transformQuery: (args) => args.node,
      transformResult: async (args) => {
        if (args.result.rows.some((row) => 'page_dimensions' in (row as object))) sizesRead++;
        await new Promise((r) => setTimeout(r, 100));
        return args.result;
      },
    };
    const db = ctx.store.db.withPlugin(slow);
    const lists = new ListStreams({ perWorkspace: 2, total: 4 });
    const open = () => directList(lists, own, db);
    // Two lists started (their first step asked for), then given up by their clients.
    const given = [await open(), await open()];
    for (const { stream } of given) stream.on('data', () => {}).on('error', () => {});
    await new Promise((r) => setTimeout(r, 20));
    for (const { raw } of given) raw.emit('close');
    assert.throws(() => lists.acquire(own), /At most 2 streamed lists/, 'their slots are held while their steps settle');
    for (let waited = 0; lists.open(own) > 0 && waited < 5000; waited += 10) await new Promise((r) => setTimeout(r, 10));
    assert.equal(lists.open(own), 0);
    // The first list's step had begun (its query slowed); the second's waited for its turn, and then read nothing.
    assert.equal(sizesRead, 1);
    // Two lists now, read whole: nothing left of the others stands in their way.
    const whole = await Promise.all(
      [await open(), await open()].map(async ({ stream }) => {
        let text = '';
        for await (const chunk of stream) text += chunk;
        return JSON.parse(text) as { data: Array<{ pageDimensions: unknown[] }>; meta: { total: number } };
      }),
    );
    for (const list of whole) {
      assert.equal(list.data.length, 6);
      assert.equal(list.data[0]!.pageDimensions.length, 10_000);
    }
    assert.equal(lists.open(), 0);
  });

  it('cuts a streamed list whose client takes nothing for a while, giving its slot back', async () => {
    const own = await longWorkspace(3);
    const lists = new ListStreams({ perWorkspace: 1, total: 1, idleMs: 300 });
    const { stream, raw } = await directList(lists, own);
    stream.on('error', () => {});
    // Its first part taken, then nothing: a client that stopped reading.
    const first = await new Promise<Buffer>((resolve) =>
      stream.once('data', (chunk: Buffer) => {
        stream.pause();
        resolve(chunk);
      }),
    );
    assert.equal(first.toString(), '{"success":true,"data":[');
    assert.equal(lists.open(own), 1);
    await new Promise((r) => setTimeout(r, 150));
    assert.equal(raw.cuts, 0, 'not before its time');
    for (let waited = 0; lists.open(own) > 0 && waited < 5000; waited += 20) await new Promise((r) => setTimeout(r, 20));
    assert.equal(lists.open(own), 0);
    assert.equal(raw.cuts, 1);
    assert.ok(stream.destroyed);
  });

  it('does not cut a list whose client reads while its step waits for its turn', async () => {
    const own = await longWorkspace(3);
    const lists = new ListStreams({ perWorkspace: 1, total: 2, idleMs: 300 });
    // Another workspace's step holds the queue for 800 ms.
    const busy = lists.step('another', () => new Promise((r) => setTimeout(r, 800)));
    const { stream, raw } = await directList(lists, own);
    let text = '';
    for await (const chunk of stream) text += chunk;
    await busy;
    assert.equal(raw.cuts, 0);
    assert.equal(JSON.parse(text).data.length, 4);
  });

  it(`refuses a workspace's streamed list beyond ${LIST_STREAMS.perWorkspace} open at once, not another's, and gives the slot back when a client goes`, async () => {
    // 100 documents of 10,000 pages: 27 MB a list, more than the sockets hold for a client that does not read.
    const own = `ws_${newId()}`;
    const h = bearer(await ctx.key(ALL, own));
    await longDocuments(100, 10_000, h);
    const other = bearer(await ctx.key(ALL, workspace));
    await ctx.app.listen({ host: '127.0.0.1', port: 0 });
    const port = (ctx.app.server.address() as AddressInfo).port;
    const open = (auth: Record<string, string>) =>
      new Promise<{ status: number; response: http.IncomingMessage; request: http.ClientRequest }>((resolve, reject) => {
        const request = http.get({ host: '127.0.0.1', port, path: '/api/v1/documents?limit=100', headers: auth }, (response) => {
          response.pause();
          resolve({ status: response.statusCode ?? 0, response, request });
        });
        request.on('error', reject);
      });
    const held: Array<Awaited<ReturnType<typeof open>>> = [];
    try {
      for (let i = 0; i < LIST_STREAMS.perWorkspace; i++) held.push(await open(h));
      assert.deepEqual(held.map((o) => o.status), Array(LIST_STREAMS.perWorkspace).fill(200));
      const refused = await open(h);
      assert.equal(refused.status, 429);
      assert.equal(refused.response.headers['retry-after'], '1');
      const chunks: Buffer[] = [];
      for await (const chunk of refused.response) chunks.push(chunk as Buffer);
      const error = JSON.parse(Buffer.concat(chunks).toString());
      assert.equal(error.code, 'rate_limited');
      assert.match(error.hint, /streamed lists of long documents per workspace/);
      // Another workspace's long list is not refused for it.
      const others = await list('?limit=100', {}, other);
      assert.equal(others.statusCode, 200);
      assert.equal(others.headers['content-length'], undefined, 'streamed as well');
      // A client that goes gives its slot back: the next list of the workspace is read whole.
      held.pop()!.request.destroy();
      let again: Awaited<ReturnType<typeof open>> | undefined;
      for (let tries = 0; tries < 50; tries++) {
        again = await open(h);
        if (again.status === 200) break;
        again.response.resume();
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.equal(again!.status, 200);
      let bytes = '';
      again!.response.setEncoding('utf8');
      for await (const chunk of again!.response) bytes += chunk;
      const whole = JSON.parse(bytes);
      assert.equal(whole.data.length, 100);
      assert.equal(whole.meta.total, 101);
    } finally {
      for (const o of held) o.request.destroy();
    }
  });
});
