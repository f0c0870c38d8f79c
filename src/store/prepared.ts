import { CompiledQuery, type Compilable, type Kysely } from 'kysely';

/**
 * A hot query compiled once per database instead of on every call. `build` receives one
 * placeholder per argument and must use each exactly where its value goes; the compiled SQL is
 * then run with the real values in their places. Only for queries whose shape does not depend on
 * the values (no optional clauses, no `in (…)` lists).
 */
export function preparedQuery<Row, Args extends unknown[]>(
  arity: Args['length'],
  build: (db: Kysely<any>, ...placeholders: string[]) => Compilable<Row>,
): (db: Kysely<any>, ...args: Args) => Promise<Row[]> {
  // Keyed by the dialect's adapter class: the SQL is the same for every connection and
  // transaction of one dialect, and those are new Kysely objects each time.
  const compiled = new WeakMap<object, { sql: string; slots: number[] }>();
  const marks = Array.from({ length: arity }, (_, i) => `\u0000formsign-arg-${i}\u0000`);
  return async (db, ...args) => {
    const dialect = db.getExecutor().adapter.constructor;
    let entry = compiled.get(dialect);
    if (!entry) {
      const query = build(db, ...marks).compile();
      const slots = query.parameters.map((p) => marks.indexOf(p as string));
      if (slots.some((slot) => slot < 0)) throw new Error('preparedQuery: a parameter is not one of the placeholders');
      entry = { sql: query.sql, slots };
      compiled.set(dialect, entry);
    }
    const result = await db.executeQuery<Row>(CompiledQuery.raw(entry.sql, entry.slots.map((slot) => args[slot])));
    return result.rows;
  };
}
