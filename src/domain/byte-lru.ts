/**
 * A least-recently-used map bounded by the bytes its entries are said to take, for caches of
 * derived data (compiled forms) that must never grow with the number of things cached. An entry
 * larger than the whole budget is not kept.
 */
export class ByteLru<V> {
  /** Most recently used last (a `Map` iterates in insertion order). */
  private readonly entries = new Map<string, { value: V; bytes: number }>();
  private used = 0;

  constructor(readonly maxBytes: number) {}

  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.value;
  }

  set(key: string, value: V, bytes: number): void {
    this.delete(key);
    if (bytes > this.maxBytes) return;
    this.entries.set(key, { value, bytes });
    this.used += bytes;
    for (const [oldest, entry] of this.entries) {
      if (this.used <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.used -= entry.bytes;
    }
  }

  delete(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.used -= entry.bytes;
  }
}
