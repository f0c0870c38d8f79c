import crypto from 'node:crypto';
import { Redis } from 'ioredis';
import { type RateLimiter, type RateLimitResult, resultFor, windowOf, WINDOW_MS } from './limiter.js';
import { MemoryRateLimiter } from './memory.js';

export interface RedisLimiterOptions {
  limit: number;
  url: string;
  /** Called when Redis fails and the process falls back to counting on its own. */
  onError?: (error: unknown) => void;
  /** How long one round trip may take before the fallback answers. */
  timeoutMs?: number;
  keyPrefix?: string;
}

/** Counts one request and sets the window's expiry when it is the first: one command, atomic. */
const HIT_SCRIPT = `local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return n`;

/**
 * The shared limiter: a small Lua script does `INCR` of `<prefix><bucket>:<window>` (and its
 * `EXPIRE` the first time), one command and one round trip per request. Redis runs scripts
 * atomically, so the count is exact under any concurrency and across every process that shares
 * the server.
 *
 * When Redis cannot be reached the request is not refused and not let through unlimited: this
 * process counts on its own (as the embedded limiter does) until Redis answers again.
 */
export class RedisRateLimiter implements RateLimiter {
  private readonly redis: Redis;
  private readonly fallback: MemoryRateLimiter;
  private readonly prefix: string;
  private readonly timeoutMs: number;
  private readonly scriptSha = crypto.createHash('sha1').update(HIT_SCRIPT).digest('hex');

  constructor(private readonly options: RedisLimiterOptions) {
    this.redis = new Redis(options.url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      connectTimeout: 2000,
      lazyConnect: false,
    });
    this.redis.on('error', (error) => options.onError?.(error));
    this.fallback = new MemoryRateLimiter(options.limit);
    this.prefix = options.keyPrefix ?? 'formsign:rl:';
    this.timeoutMs = options.timeoutMs ?? 1000;
  }

  /** Resolves once the connection is up (or rejects after the connect timeout). */
  async ready(): Promise<void> {
    if (this.redis.status === 'ready') return;
    await new Promise<void>((resolve, reject) => {
      const onReady = () => {
        cleanup();
        resolve();
      };
      const onError = (error: unknown) => {
        cleanup();
        reject(error);
      };
      const cleanup = () => {
        this.redis.off('ready', onReady);
        this.redis.off('error', onError);
      };
      this.redis.once('ready', onReady);
      this.redis.once('error', onError);
    });
  }

  async hit(bucket: string, nowMs: number): Promise<RateLimitResult> {
    const window = windowOf(nowMs);
    const key = `${this.prefix}${bucket}:${window}`;
    // Relative to the caller's clock, so the key lives until its window is over (plus a margin).
    const ttlSeconds = Math.ceil(((window + 1) * WINDOW_MS - nowMs) / 1000) + 5;
    try {
      const count = await withTimeout(this.redis.evalsha(this.scriptSha, 1, key, ttlSeconds).catch((error: Error) => {
        // After a Redis restart the script cache is empty: send the script itself once.
        if (!String(error.message).includes('NOSCRIPT')) throw error;
        return this.redis.eval(HIT_SCRIPT, 1, key, ttlSeconds);
      }), this.timeoutMs);
      return resultFor(Number(count), this.options.limit, window);
    } catch (error) {
      this.options.onError?.(error);
      return this.fallback.hit(bucket, nowMs);
    }
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`Redis did not answer within ${ms} ms`)), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
