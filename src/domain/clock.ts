/**
 * The one clock of the service (`deps.clock`): every time taken for a write, a key's expiry, a
 * job's lease or a sweep comes from it, so that tests can set it.
 */
export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that stands still at `at` until moved (tests). */
export function fixedClock(at: number | string): Clock & { set(to: number | string): void; advance(ms: number): void } {
  let now = typeof at === 'string' ? Date.parse(at) : at;
  return {
    now: () => now,
    set: (to) => {
      now = typeof to === 'string' ? Date.parse(to) : to;
    },
    advance: (ms) => {
      now += ms;
    },
  };
}

/** The clock's time as stored (ISO 8601 UTC with milliseconds). */
export function isoNow(clock: Clock): string {
  return new Date(clock.now()).toISOString();
}
