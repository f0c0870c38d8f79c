import { FairQueue } from '../files/fair-queue.js';
import { Slots } from './slots.js';

/**
 * The streamed lists of this process: at most `perWorkspace` open at once per workspace and
 * `total` in all (`Slots`: 429 / 503 beyond, before anything is sent), each holding its
 * compressor and the step it is sending; and their steps, run one at a time with workspaces taking
 * turns (`FairQueue`), so that many lists read at once take turns on the event loop with every
 * other request rather than each running step after step.
 */
export class ListStreams {
  private readonly slots: Slots;
  private readonly steps: FairQueue;

  constructor(options: { perWorkspace: number; total: number }) {
    this.slots = new Slots({ what: 'streamed lists of long documents', retryAfterS: 1, ...options });
    // One step waiting per open list at most: the queue's own bounds are never reached.
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
