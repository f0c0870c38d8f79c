import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { MemoryRateLimiter } from '../../src/limits/memory.js';
import { RedisRateLimiter } from '../../src/limits/redis.js';
import { TEST_REDIS_URL } from '../helpers/context.js';

const MINUTE = 60_000;
const T = 1_800_000_000_000; // a window boundary (divisible by 60 000)

describe('memory rate limiter', () => {
  it('counts per bucket in clock-aligned windows', async () => {
    const limiter = new MemoryRateLimiter(3);
    const seen = [];
    for (let i = 0; i < 4; i++) seen.push(await limiter.hit('a', T + 59_999));
    assert.deepEqual(seen.map((r) => [r.allowed, r.remaining]), [[true, 2], [true, 1], [true, 0], [false, 0]]);
    assert.ok(seen.every((r) => r.resetAt === (T + MINUTE) / 1000 && r.limit === 3));
    assert.equal((await limiter.hit('b', T + 59_999)).remaining, 2, 'other buckets are separate');
    const next = await limiter.hit('a', T + MINUTE);
    assert.deepEqual([next.allowed, next.remaining, next.resetAt], [true, 2, (T + 2 * MINUTE) / 1000]);
  });
});

describe('Redis rate limiter', { skip: TEST_REDIS_URL ? false : 'set FORMSIGN_TEST_REDIS_URL to run against Redis' }, () => {
  const url = TEST_REDIS_URL!;

  it('is exact under concurrency across clients: 1000 hits from two processes-worth of clients', async () => {
    const prefix = `formsign:test:${crypto.randomUUID()}:`;
    const a = new RedisRateLimiter({ limit: 600, url, keyPrefix: prefix });
    const b = new RedisRateLimiter({ limit: 600, url, keyPrefix: prefix });
    try {
      await Promise.all([a.ready(), b.ready()]);
      const now = Date.now();
      const results = await Promise.all(Array.from({ length: 1000 }, (_, i) => (i % 2 ? a : b).hit('k', now)));
      assert.equal(results.filter((r) => r.allowed).length, 600);
      const remaining = results.filter((r) => r.allowed).map((r) => r.remaining).sort((x, y) => x - y);
      assert.deepEqual(remaining, Array.from({ length: 600 }, (_, i) => i));
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('keys each window separately and lets Redis expire it after the window', async () => {
    const prefix = `formsign:test:${crypto.randomUUID()}:`;
    const limiter = new RedisRateLimiter({ limit: 2, url, keyPrefix: prefix });
    const redis = new Redis(url);
    try {
      await limiter.ready();
      const now = Date.now();
      const window = Math.floor(now / MINUTE);
      await limiter.hit('k', now);
      await limiter.hit('k', now);
      assert.equal((await limiter.hit('k', now)).allowed, false);
      assert.equal((await limiter.hit('k', (window + 1) * MINUTE)).remaining, 1);
      const ttl = await redis.ttl(`${prefix}k:${window}`);
      const left = Math.ceil(((window + 1) * MINUTE - now) / 1000);
      assert.ok(ttl > 0 && ttl <= left + 5, `ttl ${ttl}, window ends in ${left}s`);
      assert.equal(await redis.get(`${prefix}k:${window}`), '3');
    } finally {
      await limiter.close();
      redis.disconnect();
    }
  });
});

describe('Redis rate limiter when Redis is unreachable', () => {
  it('falls back to counting in the process, neither refusing all nor letting all through', async () => {
    const errors: unknown[] = [];
    // Port 1 on loopback: nothing listens there, the connection is refused at once.
    const limiter = new RedisRateLimiter({ limit: 2, url: 'redis://127.0.0.1:1', onError: (e) => errors.push(e), timeoutMs: 200 });
    try {
      const now = Date.now();
      const results = [await limiter.hit('k', now), await limiter.hit('k', now), await limiter.hit('k', now)];
      assert.deepEqual(results.map((r) => r.allowed), [true, true, false]);
      assert.ok(errors.length > 0, 'the failure is reported');
    } finally {
      await limiter.close();
    }
  });
});
