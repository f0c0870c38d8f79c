import { sql, type Kysely } from 'kysely';

/**
 * Dense 0-based positions of the children of one parent (fields of a document, questions of a
 * form, …), kept in a `position` column. Callers run these inside the transaction that holds the
 * parent's row lock, so concurrent inserts never share a position.
 */
export interface Siblings {
  table: string;
  parentColumn: string;
  parentId: string;
}

export async function countSiblings(db: Kysely<any>, s: Siblings): Promise<number> {
  const result = await sql<{ n: number | string }>`select count(*) as n from ${sql.table(s.table)} where ${sql.ref(s.parentColumn)} = ${s.parentId}`.execute(db);
  return Number(result.rows[0]?.n ?? 0);
}

/** Where an item asked to go to `requested` lands among `count` items (past the end means the end). */
export function clampPosition(requested: number | undefined, count: number): number {
  return requested === undefined ? count : Math.min(Math.max(0, requested), count);
}

/** Makes room at `at`: every sibling at or after it moves one down. */
export async function openGap(db: Kysely<any>, s: Siblings, at: number): Promise<void> {
  await sql`update ${sql.table(s.table)} set position = position + 1 where ${sql.ref(s.parentColumn)} = ${s.parentId} and position >= ${at}`.execute(db);
}

/** Closes the gap left at `at`: every sibling after it moves one up. */
export async function closeGap(db: Kysely<any>, s: Siblings, at: number): Promise<void> {
  await sql`update ${sql.table(s.table)} set position = position - 1 where ${sql.ref(s.parentColumn)} = ${s.parentId} and position > ${at}`.execute(db);
}

/** Moves the item at `from` to `to`, shifting the ones between; the item itself is updated by the caller. */
export async function shiftBetween(db: Kysely<any>, s: Siblings, from: number, to: number): Promise<void> {
  if (to > from) {
    await sql`update ${sql.table(s.table)} set position = position - 1 where ${sql.ref(s.parentColumn)} = ${s.parentId} and position > ${from} and position <= ${to}`.execute(db);
  } else if (to < from) {
    await sql`update ${sql.table(s.table)} set position = position + 1 where ${sql.ref(s.parentColumn)} = ${s.parentId} and position >= ${to} and position < ${from}`.execute(db);
  }
}
