import type { SelectQueryBuilder } from 'kysely';
import type { Dialect } from './db.js';

/**
 * Locks the selected rows for the rest of the transaction. PostgreSQL needs `FOR UPDATE`; SQLite
 * has one writer at a time, so the transaction itself is the lock there.
 */
export function forUpdate<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  dialect: Dialect,
): SelectQueryBuilder<DB, TB, O> {
  return dialect === 'postgres' ? query.forUpdate() : query;
}
