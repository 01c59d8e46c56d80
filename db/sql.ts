import type { Knex } from 'knex';

// The one way the service writes a hand-written statement and runs it: SQL text with `?` placeholders and its
// values, built by the `sql` template (values always bound), run by `runSql` on a connection from knex's pool.
// Knex's query builder remains for migrations, the directory import and tests.

/** A piece of parameterised SQL with knex-style `?` placeholders and their values, in order. */
export interface SqlFragment {
  readonly sql: string;
  readonly bindings: readonly SqlValue[];
  /** Set by `prepared`: the name the statement is parsed and planned under, once per connection. */
  readonly name?: string;
}

/** What a placeholder binds: pg sends arrays as PostgreSQL arrays and null as NULL. */
export type SqlValue = string | number | boolean | null | readonly string[] | Buffer;

const isFragment = (value: SqlFragment | SqlValue): value is SqlFragment =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && !Buffer.isBuffer(value);

/**
 * Builds SQL from a template: embedded fragments are spliced in with their bindings, every other value
 * becomes a `?` placeholder. Literal text comes only from the source code, never from requests.
 */
export function sql(strings: TemplateStringsArray, ...values: ReadonlyArray<SqlFragment | SqlValue>): SqlFragment {
  let text = strings[0];
  const bindings: SqlValue[] = [];
  values.forEach((value, i) => {
    if (isFragment(value)) {
      text += value.sql;
      bindings.push(...value.bindings);
    } else {
      text += '?';
      bindings.push(value);
    }
    text += strings[i + 1];
  });
  return { sql: text, bindings };
}

/** Trusted SQL text from the source code. */
export const raw = (text: string): SqlFragment => ({ sql: text, bindings: [] });

export function joinSql(fragments: readonly SqlFragment[], separator: string): SqlFragment {
  return {
    sql: fragments.map((f) => f.sql).join(separator),
    bindings: fragments.flatMap((f) => f.bindings),
  };
}

/**
 * A statement PostgreSQL parses and plans once per pooled connection and then runs by name: for the few that
 * every delivery runs. A name stands for one SQL text (pg refuses a name reused for another), so a statement
 * with variants takes a name per variant. Statements whose text follows the request (filters) stay unnamed.
 */
export const prepared = (name: string, statement: SqlFragment): SqlFragment => ({ ...statement, name });

/** `?` placeholders as pg's `$n`: the engine's SQL text holds no other `?` (values are always bound). */
export const positionalSql = (sql: string): string => {
  let position = 0;
  return sql.replace(/\?/g, () => `$${++position}`);
};

/** The part of a pg client the runner calls: the callback form of `query`. */
interface PgClient {
  query(
    config: { readonly name?: string; readonly text: string; readonly values: readonly unknown[] },
    callback: (error: Error | null, result: { rows: unknown[] }) => void,
  ): void;
}

/**
 * Runs one statement on a pg client from knex's pool, without knex's query builder: the statement is complete
 * SQL already, and knex's per-query work was a third of the SCIM API's CPU time on a page of 100 groups. It
 * calls pg's callback form of `query`, as knex does: under load, the promise form made young-generation GCs
 * keep far more garbage alive, which then needed mark-compacts (BENCHMARKS.md).
 */
export async function runSql<Row>(knex: Knex, query: SqlFragment): Promise<Row[]> {
  const client = (await knex.client.acquireConnection()) as PgClient;
  try {
    // Knex's 'query' event still fires, for whoever watches the SQL (tests, debugging).
    if (knex.listenerCount('query')) knex.emit('query', { sql: query.sql, bindings: query.bindings });
    return await new Promise<Row[]>((resolve, reject) => {
      const statement = { name: query.name, text: positionalSql(query.sql), values: query.bindings };
      client.query(statement, (error, result) => (error ? reject(error) : resolve(result.rows as Row[])));
    });
  } finally {
    await knex.client.releaseConnection(client);
  }
}
