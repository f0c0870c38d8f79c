import { ByteLru } from '../domain/byte-lru.js';

/** What a loader of a `StampedCache` answers: the value, the stamp it was made from, its size. */
export interface Stamped<V> {
  value: V;
  stamp: string;
  bytes: number;
}

/**
 * Values derived from a form's draft (its compiled logic, its content as JSON), kept per form with
 * the stamp of the draft they were made from (`updated_at`, which every change moves forward:
 * `nextStamp` in src/store/live.ts) and bounded by bytes. A value is served only for the stamp
 * it was made from, so a change made through any server is seen at once; requests that miss
 * together share one load, so ten parallel reads of a large form just changed cost one.
 */
export class StampedCache<V> {
  private readonly kept: ByteLru<Stamped<V>>;
  private readonly loading = new Map<string, Promise<Stamped<V> | undefined>>();

  constructor(maxBytes: number) {
    this.kept = new ByteLru(maxBytes);
  }

  /**
   * The value for `key` made from the draft of stamp `stamp`, from the cache or from `load`
   * (which reads the draft afresh: its stamp may be newer than `stamp` if a change committed
   * meanwhile; what it answers is kept under its own stamp). `undefined` when `load` finds nothing.
   */
  async get(key: string, stamp: string, load: () => Promise<Stamped<V> | undefined>): Promise<Stamped<V> | undefined> {
    const hit = this.kept.get(key);
    if (hit?.stamp === stamp) return hit;
    const flight = `${key}\u0000${stamp}`;
    let pending = this.loading.get(flight);
    if (!pending) {
      pending = load().then(
        (loaded) => {
          this.loading.delete(flight);
          if (loaded) this.kept.set(key, loaded, loaded.bytes);
          return loaded;
        },
        (error: unknown) => {
          this.loading.delete(flight);
          throw error;
        },
      );
      this.loading.set(flight, pending);
    }
    return pending;
  }
}
