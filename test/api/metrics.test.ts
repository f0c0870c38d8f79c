import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { bearer, createTestContext, type TestContext } from '../helpers/context.js';
import { makePdf, multipart } from '../helpers/files.js';

const TOKEN = 'metrics-token-0123456789';

describe('GET /metrics', () => {
  let ctx: TestContext;
  let headers: Record<string, string>;

  before(async () => {
    // The rate limit counts by the minute: the service's clock starts 1 s into a minute and runs
    // on, so that the test's requests never straddle two minutes (which reset the count).
    const started = Date.now();
    const minute = Math.floor(started / 60_000) * 60_000 + 1_000;
    ctx = await createTestContext({ rateLimit: 2, metrics: { enabled: true, token: TOKEN }, now: () => minute + (Date.now() - started) });
    headers = bearer(await ctx.key(['forms:read', 'forms:write', 'documents:write'], 'metrics'));
  });
  after(() => ctx.close());

  const scrape = (auth: Record<string, string> = { authorization: `Bearer ${TOKEN}` }) => ctx.app.inject({ method: 'GET', url: '/metrics', headers: auth });

  it('needs the token when METRICS_TOKEN is set', async () => {
    const none = await scrape({});
    assert.equal(none.statusCode, 401);
    assert.equal(none.json().code, 'missing_api_key');
    const wrong = await scrape({ authorization: 'Bearer nope' });
    assert.equal(wrong.statusCode, 401);
    assert.equal(wrong.json().code, 'invalid_api_key');
  });

  it('counts requests by route and status, refusals, uploads, replays; reports parse jobs and process metrics; is not rate limited', async () => {
    await ctx.app.inject({ method: 'POST', url: '/api/v1/forms', headers: { ...headers, 'idempotency-key': 'm1' }, payload: { title: 'M' } });
    await ctx.app.inject({ method: 'POST', url: '/api/v1/forms', headers: { ...headers, 'idempotency-key': 'm1' }, payload: { title: 'M' } });
    const pdf = multipart([{ name: 'file', data: await makePdf([{ width: 612, height: 792 }]), filename: 'a.pdf' }]);
    const upload = await ctx.app.inject({ method: 'POST', url: '/api/v1/documents', headers: { ...headers, ...pdf.headers }, payload: pdf.payload });
    assert.equal(upload.statusCode, 429, 'the third request of the minute');
    for (let i = 0; i < 5; i++) assert.equal((await scrape()).statusCode, 200, 'scrapes are never rate limited');
    const res = await scrape();
    assert.match(res.headers['content-type'] as string, /^text\/plain; version=0\.0\.4/);
    const text = res.body;
    assert.match(text, /formsign_http_requests_total\{method="POST",route="\/api\/v1\/forms",status="201"\} 2/);
    assert.match(text, /formsign_http_request_duration_seconds_bucket\{le="[^"]+",method="POST",route="\/api\/v1\/forms",status="201"\} \d/);
    assert.match(text, /formsign_rate_limit_refusals_total 1/);
    assert.match(text, /formsign_uploads_total\{status="429"\} 1/);
    assert.match(text, /formsign_idempotent_replays_total 1/);
    assert.match(text, /formsign_parse_jobs\{status="pending"\} 0/);
    assert.match(text, /formsign_parse_queue_depth 0/);
    assert.match(text, /formsign_webhook_deliveries\{status="pending"\} 0/);
    assert.match(text, /formsign_webhook_deliveries\{status="failed"\} 0/);
    assert.match(text, /formsign_webhook_queue_depth 0/);
    assert.match(text, /process_resident_memory_bytes \d+/);
    assert.match(text, /nodejs_eventloop_lag_seconds/);
    assert.ok(!text.includes('route="/metrics"'));
  });
});

describe('metrics off by default; compression', () => {
  let ctx: TestContext;
  let headers: Record<string, string>;
  before(async () => {
    ctx = await createTestContext();
    headers = bearer(await ctx.key(['forms:read', 'forms:write'], 'compress'));
  });
  after(() => ctx.close());

  it('GET /metrics is 404 without METRICS=true', async () => {
    assert.equal((await ctx.app.inject({ method: 'GET', url: '/metrics' })).statusCode, 404);
  });

  it('JSON above 1 KiB is compressed as accepted (br preferred, gzip); small answers and those not accepting are not', async () => {
    const form = (await ctx.app.inject({ method: 'POST', url: '/api/v1/forms', headers, payload: { title: 'Big', description: 'x'.repeat(900), settings: { notes: 'y'.repeat(2000) } } })).json().data;
    const plain = await ctx.app.inject({ method: 'GET', url: `/api/v1/forms/${form.id}`, headers });
    assert.equal(plain.headers['content-encoding'], undefined);
    const br = await ctx.app.inject({ method: 'GET', url: `/api/v1/forms/${form.id}`, headers: { ...headers, 'accept-encoding': 'gzip, br' } });
    assert.equal(br.headers['content-encoding'], 'br');
    assert.equal(br.headers.etag, plain.headers.etag);
    assert.ok(br.rawPayload.length < plain.rawPayload.length / 3);
    assert.equal(zlib.brotliDecompressSync(br.rawPayload).toString(), plain.body);
    const gzip = await ctx.app.inject({ method: 'GET', url: `/api/v1/forms/${form.id}`, headers: { ...headers, 'accept-encoding': 'gzip' } });
    assert.equal(gzip.headers['content-encoding'], 'gzip');
    assert.equal(zlib.gunzipSync(gzip.rawPayload).toString(), plain.body);
    const small = await ctx.app.inject({ method: 'GET', url: '/api/v1/forms?limit=1&status=archived', headers: { ...headers, 'accept-encoding': 'br' } });
    assert.equal(small.headers['content-encoding'], undefined);
    // An idempotent replay is compressed the same way and decompresses to the kept bytes.
    const first = await ctx.app.inject({ method: 'POST', url: '/api/v1/forms', headers: { ...headers, 'idempotency-key': 'c1', 'accept-encoding': 'gzip' }, payload: { title: 'Z', settings: { notes: 'z'.repeat(2000) } } });
    const replay = await ctx.app.inject({ method: 'POST', url: '/api/v1/forms', headers: { ...headers, 'idempotency-key': 'c1' }, payload: { title: 'Z', settings: { notes: 'z'.repeat(2000) } } });
    assert.equal(first.headers['content-encoding'], 'gzip');
    assert.equal(zlib.gunzipSync(first.rawPayload).toString(), replay.body);
  });

  it('a form with its content sent compressed by its handler is negotiated, tagged and revalidated as any answer', async () => {
    const form = (await ctx.app.inject({ method: 'POST', url: '/api/v1/forms', headers, payload: { title: 'Shared', description: 'x'.repeat(900) } })).json().data;
    for (let i = 0; i < 20; i++) {
      const res = await ctx.app.inject({ method: 'POST', url: `/api/v1/forms/${form.id}/questions`, headers, payload: { questionText: `Question ${i} ${'q'.repeat(200)}`, type: 'short_text' } });
      assert.equal(res.statusCode, 201, res.body);
    }
    const url = `/api/v1/forms/${form.id}`;
    const get = (extra: Record<string, string>) => ctx.app.inject({ method: 'GET', url, headers: { ...headers, ...extra } });
    const plain = await get({});
    assert.equal(plain.headers['content-encoding'], undefined);
    const [a, b] = await Promise.all([get({ 'accept-encoding': 'br' }), get({ 'accept-encoding': 'br, gzip' })]);
    for (const res of [a, b]) {
      assert.equal(res.headers['content-encoding'], 'br');
      assert.equal(res.headers.vary, 'accept-encoding');
      assert.equal(res.headers.etag, plain.headers.etag);
      assert.equal(Number(res.headers['content-length']), res.rawPayload.length);
      assert.equal(zlib.brotliDecompressSync(res.rawPayload).toString(), plain.body);
    }
    // q=0 refuses br; x-no-compression and identity get the JSON as it is.
    const gzip = await get({ 'accept-encoding': 'br;q=0, gzip' });
    assert.equal(gzip.headers['content-encoding'], 'gzip');
    assert.equal(zlib.gunzipSync(gzip.rawPayload).toString(), plain.body);
    assert.equal((await get({ 'accept-encoding': 'br', 'x-no-compression': '1' })).body, plain.body);
    assert.equal((await get({ 'accept-encoding': 'identity' })).body, plain.body);
    // Revalidated with the tag: 304 with no body and no encoding.
    const notModified = await get({ 'accept-encoding': 'br', 'if-none-match': String(plain.headers.etag) });
    assert.equal(notModified.statusCode, 304);
    assert.equal(notModified.headers['content-encoding'], undefined);
    assert.equal(notModified.rawPayload.length, 0);
    // A change is a new stamp: the next compressed answer holds it.
    await ctx.app.inject({ method: 'PUT', url, headers, payload: { title: 'Shared, renamed' } });
    const changed = await get({ 'accept-encoding': 'br' });
    assert.notEqual(changed.headers.etag, plain.headers.etag);
    const fresh = await get({});
    assert.equal(zlib.brotliDecompressSync(changed.rawPayload).toString(), fresh.body);
    assert.equal(fresh.json().data.title, 'Shared, renamed');
    assert.equal(changed.headers.etag, fresh.headers.etag);
  });
});
