import { type RateLimiter, type RateLimitResult, resultFor, windowOf } from './limiter.js';

/**
 * The embedded limiter: one process's counts in a Map. Because windows are aligned to the clock,
 * every count of an earlier window is dead the moment a new window starts, so the Map is
 * cleared then and never grows beyond one window's buckets.
 */
export class MemoryRateLimiter implements RateLimiter {
  private window = -1;
  private readonly counts = new Map<string, number>();

  constructor(private readonly limit: number) {}

  hit(bucket: string, nowMs: number): RateLimitResult {
    const window = windowOf(nowMs);
    if (window > this.window) {
      this.window = window;
      this.counts.clear();
    }
    // A clock that stepped back into an earlier window is counted in the newest one seen.
    const count = (this.counts.get(bucket) ?? 0) + 1;
    this.counts.set(bucket, count);
    return resultFor(count, this.limit, this.window);
  }

  async close(): Promise<void> {
    this.counts.clear();
  }
}
