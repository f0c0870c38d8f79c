import { AppError } from './errors.js';

/** Lifecycle of forms and documents: forward only, draft → published → archived, or draft → archived. */
export const STATUSES = ['draft', 'published', 'archived'] as const;
export type Status = (typeof STATUSES)[number];

const RANK: Record<Status, number> = { draft: 0, published: 1, archived: 2 };

/**
 * Throws `invalid_status_transition` for a move backwards. Staying in the same status is allowed
 * (and changes nothing). `published` is reached only by publishing, which the caller handles.
 */
export function assertForwardTransition(kind: string, from: Status, to: Status): void {
  if (from === to) return;
  if (from === 'archived' || RANK[to] < RANK[from]) {
    throw new AppError(
      'invalid_status_transition',
      `A ${kind} cannot move from "${from}" back to "${to}": status only moves forward (draft → published → archived).`,
    );
  }
}
