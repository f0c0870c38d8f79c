import { FairQueue } from '../files/fair-queue.js';
import { Slots } from './slots.js';

/**
 * The most page sizes read and written out in one step of a list: about 520 KB of them. A list
 * whose documents have more is streamed a step at a time (`documentListAnswer` in
 * document-answer.ts), so that a list of 100 documents of 10,000 pages (27 MB) neither holds the
 * event loop nor sits in memory whole (docs/decisions.md, "Lists of very long documents").
 */
export const LIST_STEP_PAGES = 20_000;

/**
 * Lists of long documents streamed at once (`ListStreams`): per workspace (more is 429
 * `rate_limited`) and in all (503 `unavailable`). Each holds a compressor and up to two steps of
 * about 520 KB of page sizes while its client reads. A list of fewer pages is not counted.
 */
export const LIST_STREAMS = { perWorkspace: 4, total: 32 };

/**
 * A streamed list whose client has not taken its last step (the next is asked for only once the
 * last has been handed to the socket: about 520 KB of JSON, a few KB compressed) this long after
 * that step was ready is cut, so that a client that stops reading does not keep its list's slot.
 * Time a step spends waiting for its turn or running does not count.
 */
export const LIST_IDLE_MS = 60_000;

/**
 * The streamed lists of this process: at most `perWorkspace` open at once per workspace and
 * `total` in all (`Slots`: 429 / 503 beyond, before anything is sent), each holding its
 * compressor and up to two steps while its client reads; and their steps, run one at a time with
 * workspaces taking turns (`FairQueue`), so that many lists read at once take turns on the event
 * loop with every other request rather than each running step after step.
 */
export class ListStreams {
  private readonly slots: Slots;
  private readonly steps: FairQueue;

  /** How long a list's client may take nothing of it before the list is cut. */
  readonly idleMs: number;

  constructor(options: { perWorkspace: number; total: number; idleMs?: number }) {
    this.idleMs = options.idleMs ?? LIST_IDLE_MS;
    this.slots = new Slots({
      what: 'streamed lists of long documents',
      retryAfterS: 1,
      fullHint: 'The service is streaming as many lists of long documents as it takes at once; retry shortly.',
      perWorkspace: options.perWorkspace,
      total: options.total,
    });
    // One step waiting per open list at most (a list's slot is held until its last step has
    // settled): the queue's own bounds are never reached.
    this.steps = new FairQueue({ perKey: options.perWorkspace, total: options.total, retryAfterS: 1 });
  }

  acquire(workspaceId: string): () => void {
    return this.slots.acquire(workspaceId);
  }

  /** Lists open now: of `workspaceId`, or in all. */
  open(workspaceId?: string): number {
    return this.slots.count(workspaceId);
  }

  /** Runs `step` in `workspaceId`'s turn, after the event loop's next turn (a step's continuations are promises). */
  step<T>(workspaceId: string, step: () => Promise<T>): Promise<T> {
    return this.steps.run(workspaceId, () => new Promise<void>((resolve) => setImmediate(resolve)).then(step));
  }
}
