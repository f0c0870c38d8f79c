import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { filesUnder } from '../helpers/files.js';
import { isEnvelope, rawRequest } from '../helpers/raw-http.js';

const RATE_HEADERS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'];

describe('requests Node refuses before routing are answered in the envelope (raw sockets)', () => {
  let ctx: TestContext;
  let port: number;

  before(async () => {
    ctx = await createTestContext({ rateLimit: 1000, http: { headersTimeoutMs: 1000 } });
    await ctx.app.listen({ host: '127.0.0.1', port: 0 });
    port = (ctx.app.server.address() as AddressInfo).port;
  });
  after(() => ctx.close());

  const cases: Array<[string, string, number, string]> = [
    ['a space in the path', 'DELETE /api/v1/forms/ /questions/1 HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'validation_failed'],
    ['a control character in the path', 'GET /api/v1/fo\x01rms HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'validation_failed'],
    ['a bad method', 'G@T /api/v1/forms HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'validation_failed'],
    ['a bad HTTP version', 'GET /api/v1/forms HTTP/9\r\nHost: x\r\n\r\n', 400, 'validation_failed'],
    ['a bad Content-Length', 'POST /api/v1/forms HTTP/1.1\r\nHost: x\r\nContent-Length: 12abc\r\n\r\n{}', 400, 'validation_failed'],
    ['two Content-Lengths', 'POST /api/v1/forms HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}', 400, 'validation_failed'],
    ['Content-Length with chunked', 'POST /api/v1/forms HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 400, 'validation_failed'],
    ['a bad chunk size', 'POST /api/v1/forms HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\nzz\r\n{}\r\n0\r\n\r\n', 400, 'validation_failed'],
    ['a header without a colon', 'GET /api/v1/forms HTTP/1.1\r\nHost: x\r\nnonsense\r\n\r\n', 400, 'validation_failed'],
    ['headers over 16 KiB', `GET /api/v1/forms HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'headers_too_large'],
  ];
  for (const [name, request, status, code] of cases) {
    it(`${name}: ${status} ${code}, X-Request-Id and the rate-limit headers`, async () => {
      const res = await rawRequest(port, request);
      assert.equal(res.status, status, res.body);
      assert.ok(isEnvelope(res.body), res.body);
      assert.equal(JSON.parse(res.body).code, code);
      assert.match(res.headers['x-request-id'] ?? '', /^[0-9a-f-]{36}$/);
      // A broken chunk is found after the headers were accepted and the request counted by the
      // guard, before the guard has decided: answered at once, without the count.
      if (name !== 'a bad chunk size') for (const header of RATE_HEADERS) assert.match(res.headers[header] ?? '', /^\d+$/, header);
      assert.equal(res.headers.connection, 'close');
    });
  }

  it('a bad percent-encoding in the path is answered by the router in the envelope, with the guard\'s headers', async () => {
    const key = await ctx.key(['forms:read']);
    const res = await rawRequest(port, `GET /api/v1/forms/%zz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nConnection: close\r\n\r\n`);
    assert.equal(res.status, 404);
    assert.ok(isEnvelope(res.body), res.body);
    assert.ok(res.headers['x-request-id']);
    for (const header of RATE_HEADERS) assert.ok(res.headers[header], header);
  });

  it('headers that trickle in past the headers timeout: 408 request_timeout in the envelope', async () => {
    const trickle = ['GET /api/v1/forms HTTP/1.1\r\n', ...Array.from({ length: 40 }, (_, i) => `X-Slow-${i}: 1\r\n`)];
    const res = await rawRequest(port, trickle, { gapMs: 100, timeoutMs: 8000 });
    assert.equal(res.status, 408, res.body);
    assert.ok(isEnvelope(res.body));
    assert.equal(JSON.parse(res.body).code, 'request_timeout');
    assert.ok(res.ms < 4000, `closed after ${res.ms} ms`);
  });

  it('a connection that sends nothing is closed after the headers timeout', async () => {
    const res = await rawRequest(port, [], { timeoutMs: 8000 }).catch((error: Error) => error);
    // Either an answer in the envelope or a plain close; never held open.
    if (!(res instanceof Error)) assert.equal(res.status, 408);
    else assert.match(res.message, /no complete response/);
  });
});

describe('slow request bodies and the upload slots (raw sockets)', () => {
  let ctx: TestContext;
  let port: number;
  let keyA: string;
  let keyA2: string;
  let keyB: string;
  let keyC: string;

  before(async () => {
    ctx = await createTestContext({ http: { minBodyBytesPerSecond: 1024, bodyRateGraceMs: 1000, uploadsPerWorkspace: 2, uploadsTotal: 3 } });
    await ctx.app.listen({ host: '127.0.0.1', port: 0 });
    port = (ctx.app.server.address() as AddressInfo).port;
    keyA = await ctx.key(['documents:write'], 'slots-a');
    keyA2 = await ctx.key(['documents:write'], 'slots-a');
    keyB = await ctx.key(['documents:write'], 'slots-b');
    keyC = await ctx.key(['documents:write'], 'slots-c');
  });
  after(() => ctx.close());

  const BOUNDARY = 'slowboundary';
  function uploadHead(key: string, length = 100_000): string {
    return (
      `POST /api/v1/documents HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n` +
      `Content-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: ${length}\r\n\r\n` +
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="slow.pdf"\r\nContent-Type: application/pdf\r\n\r\n%PDF-1.7\n`
    );
  }

  it('an upload sending a byte every 100 ms is refused with 408 after the grace period, and its temporary file is removed', async () => {
    const trickle = [uploadHead(keyA), ...Array.from({ length: 100 }, () => 'x')];
    const res = await rawRequest(port, trickle, { gapMs: 100, timeoutMs: 8000 });
    assert.equal(res.status, 408, res.body);
    assert.ok(isEnvelope(res.body));
    assert.equal(JSON.parse(res.body).code, 'request_timeout');
    assert.ok(res.ms >= 1000 && res.ms < 4000, `refused after ${res.ms} ms`);
    // The handler sees the body end and removes the temporary file.
    for (let i = 0; i < 50 && filesUnder(`${ctx.dataDir}/tmp`).length > 0; i++) await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(filesUnder(`${ctx.dataDir}/tmp`), []);
    assert.deepEqual(await ctx.storedBlobs(), []);
  });

  it('a slow JSON body is refused the same way', async () => {
    const key = await ctx.key(['forms:write']);
    const trickle = [`POST /api/v1/forms HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{`, ...Array.from({ length: 60 }, () => ' ')];
    const res = await rawRequest(port, trickle, { gapMs: 100, timeoutMs: 8000 });
    assert.equal(res.status, 408, res.body);
    assert.ok(isEnvelope(res.body));
    // Counted by the rate limit before its body was refused: the answer says so, as every answer does.
    for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'x-request-id']) assert.ok(res.headers[name], name);
  });

  it('a request refused before its body arrived (403) cannot keep the connection with a slow body', async () => {
    const trickle = [`POST /api/v1/forms HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${keyA}\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{`, ...Array.from({ length: 60 }, () => ' ')];
    const res = await rawRequest(port, trickle, { gapMs: 100, timeoutMs: 8000, untilClosed: true });
    assert.equal(res.status, 403, res.body);
    assert.ok(res.ms >= 1000 && res.ms < 4000, `closed after ${res.ms} ms`);
  });

  it('a workspace over its upload slots gets 429 with Retry-After; the process at its total gets 503; slots come back', async () => {
    // Two uploads of A in progress (their bodies are sent fast enough, but not finished).
    const { default: net } = await import('node:net');
    const open: Array<import('node:net').Socket> = [];
    const hold = async (key: string) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.on('error', () => {});
      await new Promise((r) => socket.once('connect', r));
      socket.write(uploadHead(key));
      open.push(socket);
    };
    try {
      await hold(keyA);
      await hold(keyA2);
      await new Promise((r) => setTimeout(r, 200));
      const third = await rawRequest(port, uploadHead(keyA));
      assert.equal(third.status, 429, third.body);
      assert.equal(JSON.parse(third.body).code, 'rate_limited');
      assert.equal(third.headers['retry-after'], '5');
      assert.match(JSON.parse(third.body).hint, /At most 2 uploads per workspace/);

      // B has a slot of its own; the total (3) is then reached: C is told 503.
      await hold(keyB);
      await new Promise((r) => setTimeout(r, 200));
      const fourth = await rawRequest(port, uploadHead(keyC));
      assert.equal(fourth.status, 503, fourth.body);
      assert.equal(JSON.parse(fourth.body).code, 'unavailable');
      assert.ok(fourth.headers['retry-after']);
    } finally {
      for (const socket of open) socket.destroy();
    }
    // Closed uploads give their slots back.
    await new Promise((r) => setTimeout(r, 300));
    const body = `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nnot a PDF\r\n--${BOUNDARY}--\r\n`;
    const again = await rawRequest(
      port,
      `POST /api/v1/documents HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${keyC}\r\nConnection: close\r\nContent-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    assert.equal(again.status, 415, again.body);
  });
});
