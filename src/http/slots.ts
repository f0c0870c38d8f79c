import { AppError } from '../domain/errors.js';

export interface SlotOptions {
  /** What is counted, in the plural, as the refusals name it: `uploads`. */
  what: string;
  /** Of one workspace at once. */
  perWorkspace: number;
  /** At once in this process, all workspaces together. */
  total: number;
  /** The `Retry-After` of a refusal, in seconds. */
  retryAfterS: number;
  /** The hint of the `503` (the process at its total). */
  fullHint: string;
}

/**
 * Bounds things in flight that each hold resources for as long as a client takes (an upload: a
 * socket, a temporary file, a place in the analysis queue; a streamed list: its compressor and up
 * to two steps of page sizes), per workspace and in all. One workspace over its share is told 429
 * `rate_limited` (its own doing); the process at its total answers 503 `unavailable`. Both say when
 * to retry, and nothing is done.
 */
export class Slots {
  private readonly byWorkspace = new Map<string, number>();
  private inFlight = 0;

  constructor(private readonly options: SlotOptions) {}

  /** Takes a slot for `workspaceId`, or throws; the returned function gives it back (once). */
  acquire(workspaceId: string): () => void {
    const { what, perWorkspace, total, retryAfterS, fullHint } = this.options;
    const mine = this.byWorkspace.get(workspaceId) ?? 0;
    if (mine >= perWorkspace) {
      throw new AppError('rate_limited', `At most ${perWorkspace} ${what} per workspace may be in progress at once; wait for one to finish.`, {
        'retry-after': String(retryAfterS),
      });
    }
    if (this.inFlight >= total) {
      throw new AppError('unavailable', fullHint, { 'retry-after': String(retryAfterS) });
    }
    this.byWorkspace.set(workspaceId, mine + 1);
    this.inFlight++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inFlight--;
      const left = (this.byWorkspace.get(workspaceId) ?? 1) - 1;
      if (left === 0) this.byWorkspace.delete(workspaceId);
      else this.byWorkspace.set(workspaceId, left);
    };
  }

  /** In flight now: of `workspaceId`, or in all. */
  count(workspaceId?: string): number {
    return workspaceId === undefined ? this.inFlight : (this.byWorkspace.get(workspaceId) ?? 0);
  }
}
