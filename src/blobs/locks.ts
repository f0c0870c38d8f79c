/**
 * In-process locks by content hash. Storing a blob and writing the row that refers to it, and
 * deleting a row and then its no-longer-referenced blob, each run under the lock of the hashes
 * involved, so that an upload of the same bytes cannot slip between a delete's "nobody uses this
 * blob any more" and its removal of the file.
 */
export class HashLocks {
  private readonly tails = new Map<string, Promise<void>>();

  async with<T>(hashes: string[], work: () => Promise<T>): Promise<T> {
    const keys = [...new Set(hashes)].sort();
    const releases: Array<() => void> = [];
    for (const key of keys) {
      const previous = this.tails.get(key) ?? Promise.resolve();
      let release!: () => void;
      const current = new Promise<void>((resolve) => (release = resolve));
      const tail = previous.then(() => current);
      this.tails.set(key, tail);
      releases.push(() => {
        release();
        if (this.tails.get(key) === tail) this.tails.delete(key);
      });
      await previous;
    }
    try {
      return await work();
    } finally {
      for (const release of releases) release();
    }
  }
}
