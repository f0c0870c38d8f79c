/**
 * Fixed-window rate limiting aligned to the clock: window `floor(now / 60 s)`, each window
 * counted on its own. `hit` counts the current request and says whether it may go on.
 */
export interface RateLimitResult {
  allowed: boolean;
  limit: number;
  /** Requests left in this window after this one; never negative. */
  remaining: number;
  /** Unix seconds at which the window ends. */
  resetAt: number;
}

export interface RateLimiter {
  /** Synchronous where the count is in this process; a promise where it is elsewhere. */
  hit(bucket: string, nowMs: number): RateLimitResult | Promise<RateLimitResult>;
  close(): Promise<void>;
}

export const WINDOW_MS = 60_000;

export function windowOf(nowMs: number): number {
  return Math.floor(nowMs / WINDOW_MS);
}

export function resultFor(count: number, limit: number, window: number): RateLimitResult {
  return {
    allowed: count <= limit,
    limit,
    remaining: Math.max(0, limit - count),
    resetAt: ((window + 1) * WINDOW_MS) / 1000,
  };
}
