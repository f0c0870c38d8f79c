import { Type, type TSchema } from 'typebox';
import { ERROR_STATUS } from '../../domain/errors.js';
import { STATUSES } from '../../domain/status.js';
import { paginationQuery } from '../pagination.js';

/** One of a fixed list of strings, typed as their union (`{ type: string, enum: […] }`). */
export const OneOf = <T extends string>(values: readonly T[], options: { description?: string } = {}) =>
  Type.Unsafe<T>({ type: 'string', enum: [...values], ...options });

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601 UTC with milliseconds' });
export const Id = Type.String({ format: 'uuid', description: 'UUID v7' });

export const ErrorEnvelope = Type.Object(
  {
    success: Type.Literal(false),
    error: Type.String({ description: 'Reason phrase of the status' }),
    hint: Type.String({ description: 'What went wrong and how to fix it' }),
    code: Type.Union(Object.keys(ERROR_STATUS).map((code) => Type.Literal(code))),
  },
  { $id: 'ErrorEnvelope', title: 'Error' },
);

export const Meta = Type.Object({
  total: Type.Integer({ minimum: 0 }),
  page: Type.Integer({ minimum: 1 }),
  limit: Type.Integer({ minimum: 1, maximum: 100 }),
});

export const Ok = <T extends TSchema>(data: T) => Type.Object({ success: Type.Literal(true), data });
export const OkList = <T extends TSchema>(item: T) =>
  Type.Object({ success: Type.Literal(true), data: Type.Array(item), meta: Meta });

export const Deleted = Ok(Type.Object({ id: Id, deleted: Type.Literal(true) }));

const errorRef = Type.Unsafe({ $ref: 'ErrorEnvelope#' });

/**
 * Response schemas of a route: its success shape plus the error envelope for every error status.
 * `location` documents the `Location` header the success answer carries (the created resource).
 */
export function responses(status: number, success: TSchema, options: { location?: string } = {}): Record<string, TSchema> {
  const described = options.location ? { ...success, headers: { Location: { type: 'string', description: options.location } } } : success;
  return { [status]: described, '4xx': errorRef, '5xx': errorRef };
}

export const IdParams = Type.Object({ id: Type.String() });

// ---- shared by several route modules: defined here once ------------------------------------------

/** The lifecycle status of a form or a document (draft, published, archived). */
export const Status = OneOf(STATUSES);

/** A 0-based position among siblings (fields, sections, questions, rules). */
export const Order = Type.Integer({ minimum: 0, description: '0-based position; past the end means the end' });

/** The query of a list endpoint with no filter: `page` and `limit` only. */
export const ListQuery = Type.Object(paginationQuery, { additionalProperties: false });

/** The query of `DELETE` endpoints. */
export const DeleteQuery = Type.Object(
  { permanent: Type.Optional(Type.Boolean({ description: 'Remove for good instead of hiding (soft delete).' })) },
  { additionalProperties: false },
);

/** The query of every endpoint that takes none. */
export const NoQuery = Type.Object({}, { additionalProperties: false });
