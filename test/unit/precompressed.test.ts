import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { describe, it } from 'node:test';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { sendShared } from '../../src/http/precompressed.js';

/** The parts of a request and a reply that sendShared uses. */
function exchange(headers: Record<string, string>) {
  const sent: { headers: Record<string, string>; payload?: Buffer } = { headers: {} };
  const reply = {
    type(value: string) {
      sent.headers['content-type'] = value;
      return reply;
    },
    header(name: string, value: string) {
      sent.headers[name] = value;
      return reply;
    },
    getHeader(name: string) {
      return sent.headers[name];
    },
    send(payload: Buffer) {
      sent.payload = payload;
      return reply;
    },
  };
  return { request: { headers } as unknown as FastifyRequest, reply: reply as unknown as FastifyReply, sent };
}

describe('answers compressed once for many requests', () => {
  const json = Buffer.from(JSON.stringify({ success: true, data: { items: Array.from({ length: 500 }, (_, i) => `item ${i}`) } }));

  it('requests at once for one owner and variant build and compress the body once; another variant or owner has its own', async () => {
    const owner = {};
    let built = 0;
    const body = () => (built++, json);
    const many = Array.from({ length: 10 }, () => exchange({ 'accept-encoding': 'br' }));
    await Promise.all(many.map(({ request, reply }) => sendShared(request, reply, owner, 'v1', body)));
    assert.equal(built, 1);
    for (const { sent } of many) {
      assert.equal(sent.headers['content-encoding'], 'br');
      assert.equal(sent.headers.vary, 'accept-encoding');
      assert.deepEqual(zlib.brotliDecompressSync(sent.payload!), json);
    }
    const gzip = exchange({ 'accept-encoding': 'gzip' });
    await sendShared(gzip.request, gzip.reply, owner, 'v1', body);
    assert.equal(built, 2, 'gzip is another variant of the answer');
    assert.deepEqual(zlib.gunzipSync(gzip.sent.payload!), json);
    const other = exchange({ 'accept-encoding': 'br' });
    await sendShared(other.request, other.reply, owner, 'v2', body);
    await sendShared(other.request, other.reply, {}, 'v1', body);
    assert.equal(built, 4);
  });

  it('a request that accepts no compression, or a small answer, gets the bytes as they are', async () => {
    const plain = exchange({});
    await sendShared(plain.request, plain.reply, {}, 'v', () => json);
    assert.equal(plain.sent.headers['content-encoding'], undefined);
    assert.equal(plain.sent.payload, json);
    const small = exchange({ 'accept-encoding': 'br' });
    await sendShared(small.request, small.reply, {}, 'v', () => Buffer.from('{"success":true}'));
    assert.equal(small.sent.headers['content-encoding'], undefined);
  });

  it('Vary gains accept-encoding after what it held', async () => {
    const { request, reply, sent } = exchange({ 'accept-encoding': 'gzip' });
    sent.headers.vary = 'origin';
    await sendShared(request, reply, {}, 'v', () => json);
    assert.equal(sent.headers.vary, 'origin, accept-encoding');
  });
});
