import { Type } from 'typebox';
import { AppError } from '../domain/errors.js';

export const MAX_LIMIT = 100;
export const DEFAULT_LIMIT = 20;
/** A page beyond this is refused rather than turned into an absurd SQL offset. */
export const MAX_PAGE = 1_000_000_000;

/**
 * Query keys of every list endpoint, as the digits they are on the wire (a whole number ≥ 1 in
 * decimal, leading zeros allowed as in `02`, and nothing else: not `0`, `1.0`, `0x10`, `1e3`,
 * `+5` or ` 5`); validation failures here answer `invalid_pagination`.
 */
export const paginationQuery = {
  page: Type.Optional(Type.String({ pattern: '^0*[1-9][0-9]{0,9}$', default: '1', description: 'Page number, from 1.' })),
  limit: Type.Optional(Type.String({ pattern: '^0*[1-9][0-9]*$', default: String(DEFAULT_LIMIT), description: 'Items per page; above 100 is applied as 100.' })),
};

export interface AppliedPage {
  page: number;
  limit: number;
  offset: number;
}

export function applyPagination(query: { page?: string; limit?: string }): AppliedPage {
  const page = query.page === undefined ? 1 : Number(query.page);
  if (page > MAX_PAGE) throw new AppError('invalid_pagination', `page must be a whole number from 1 to ${MAX_PAGE}`);
  const limit = query.limit === undefined ? DEFAULT_LIMIT : Math.min(Number(query.limit), MAX_LIMIT);
  return { page, limit, offset: (page - 1) * limit };
}

export function listEnvelope<T>(items: T[], total: number, page: AppliedPage) {
  return { success: true as const, data: items, meta: { total, page: page.page, limit: page.limit } };
}
