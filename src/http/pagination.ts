import { Type } from 'typebox';

export const MAX_LIMIT = 100;
export const DEFAULT_LIMIT = 20;
/** A page beyond this is refused rather than turned into an absurd SQL offset. */
export const MAX_PAGE = 1_000_000_000;

/** Query keys of every list endpoint; validation failures here answer `invalid_pagination`. */
export const paginationQuery = {
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE, default: 1, description: 'Page number, from 1.' })),
  limit: Type.Optional(
    Type.Integer({ minimum: 1, default: DEFAULT_LIMIT, description: 'Items per page; above 100 is applied as 100.' }),
  ),
};

export interface AppliedPage {
  page: number;
  limit: number;
  offset: number;
}

export function applyPagination(query: { page?: number; limit?: number }): AppliedPage {
  const page = query.page ?? 1;
  const limit = Math.min(query.limit ?? DEFAULT_LIMIT, MAX_LIMIT);
  return { page, limit, offset: (page - 1) * limit };
}

export function listEnvelope<T>(items: T[], total: number, page: AppliedPage) {
  return { success: true as const, data: items, meta: { total, page: page.page, limit: page.limit } };
}
