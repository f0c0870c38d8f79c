/** A workspace has as many items waiting as it may, or the whole queue is full: answered 503, the client retries later. */
export class QueueFull extends Error {
  constructor(
    message: string,
    /** Seconds after which trying again is likely to be served. */
    readonly retryAfterS: number,
  ) {
    super(message);
    this.name = 'QueueFull';
  }
}

export interface FairQueueLimits {
  /** Items of one key waiting (not running) beyond which that key's new items are refused. */
  perKey: number;
  /** Items waiting in all beyond which any new item is refused. */
  total: number;
  /** The `Retry-After` of a refusal, in seconds. */
  retryAfterS: number;
}

interface Waiting {
  task: () => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * Runs tasks `concurrency` at a time (one by default), at most one of each key at a time, taking
 * turns between keys (workspaces): each key has its own FIFO, and the next task is of the waiting
 * key, with nothing running, served longest ago (a key never served first) — the same rule as the
 * parse queue's claim. So with one at a time an item of a key with nothing running waits for at
 * most the item running now plus one item of each other key that has items waiting — never behind
 * another key's whole backlog; with two at a time, a key's items never wait for another single
 * key's. Each key's backlog is bounded (`perKey`), and so is the sum (`total`): past either, `run`
 * rejects with `QueueFull` at once.
 */
export class FairQueue {
  /** Keys with waiting tasks (a Map keeps arrival order, which breaks ties). */
  private readonly waiting = new Map<string, Waiting[]>();
  /** The turn at which each key was last served; see `forget` for which keys are kept. */
  private readonly lastServed = new Map<string, number>();
  private turn = 0;
  private count = 0;
  /** Keys with a task running. */
  private readonly running = new Set<string>();

  constructor(
    private readonly limits: FairQueueLimits,
    private readonly concurrency = 1,
  ) {}

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const own = this.waiting.get(key);
    if ((own?.length ?? 0) >= this.limits.perKey) {
      return Promise.reject(new QueueFull(`${this.limits.perKey} files of this workspace are already waiting to be read`, this.limits.retryAfterS));
    }
    if (this.count >= this.limits.total) {
      return Promise.reject(new QueueFull(`${this.limits.total} files are already waiting to be read`, this.limits.retryAfterS));
    }
    return new Promise<T>((resolve, reject) => {
      const item: Waiting = { task, resolve: resolve as (value: unknown) => void, reject };
      if (own) own.push(item);
      else this.waiting.set(key, [item]);
      this.count++;
      this.pump();
    });
  }

  /**
   * Drops the turns of keys with nothing waiting that were served before every waiting key (and
   * have no task running): such a key coming back would go first anyway, as a key never served
   * does. Keeps the map as small as the keys that matter.
   */
  private forget(): void {
    let oldestWaiting = Infinity;
    for (const key of this.waiting.keys()) oldestWaiting = Math.min(oldestWaiting, this.lastServed.get(key) ?? -1);
    for (const [key, served] of this.lastServed) {
      if (!this.running.has(key) && served < oldestWaiting && !this.waiting.has(key)) this.lastServed.delete(key);
    }
  }

  /** Tasks waiting (not running): of `key`, or of every key. */
  waitingCount(key?: string): number {
    return key === undefined ? this.count : (this.waiting.get(key)?.length ?? 0);
  }

  /** Refuses every waiting task with `error` (the one running finishes). */
  clear(error: Error): void {
    for (const items of this.waiting.values()) for (const item of items) item.reject(error);
    this.waiting.clear();
    this.count = 0;
  }

  private pump(): void {
    while (this.running.size < this.concurrency) {
      let key: string | null = null;
      let oldest = Infinity;
      for (const candidate of this.waiting.keys()) {
        if (this.running.has(candidate)) continue;
        const served = this.lastServed.get(candidate) ?? -1;
        if (served < oldest) [key, oldest] = [candidate, served];
      }
      if (key === null) return;
      this.start(key);
    }
  }

  private start(key: string): void {
    const items = this.waiting.get(key)!;
    const item = items.shift()!;
    if (items.length === 0) this.waiting.delete(key);
    this.count--;
    this.lastServed.set(key, this.turn++);
    this.running.add(key);
    this.forget();
    let outcome: Promise<unknown>;
    try {
      outcome = item.task();
    } catch (error) {
      outcome = Promise.reject(error);
    }
    // The next task starts before this one's caller resumes: a caller that queues more at once
    // finds the queue as it really is.
    const next = () => {
      this.running.delete(key);
      this.pump();
    };
    outcome.then(
      (value) => {
        next();
        item.resolve(value);
      },
      (error: unknown) => {
        next();
        item.reject(error);
      },
    );
  }
}
