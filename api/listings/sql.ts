import type { Knex } from 'knex';

/** One parameterised statement with `?` placeholders, runnable by knex and (renumbered) by plain pg. */
export interface SqlQuery {
  readonly sql: string;
  readonly bindings: readonly (string | number)[];
}

export async function runQuery<Row>(knex: Knex, query: SqlQuery): Promise<Row[]> {
  const result = await knex.raw<{ rows: Row[] }>(query.sql, query.bindings);
  return result.rows;
}
