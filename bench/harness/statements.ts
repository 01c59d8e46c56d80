import type { Knex } from 'knex';
import { request } from 'undici';
import { startApiServer } from '../../api/server';
import { runSql, type SqlFragment } from '../../db/sql';
import { loadConfig } from '../../lib/config';
import { createLogger } from '../../lib/logger';

/** One statement as the API ran it: SQL with `?` placeholders and its values, as knex's `query` event gives them. */
export type Statement = Pick<SqlFragment, 'sql' | 'bindings'>;

/**
 * The statements the API runs for each request, in order: the real API in this process, on `knex`, whose
 * `query` event db/sql's runner fires, asked over HTTP. Baselines then run exactly these, and the reports
 * EXPLAIN them: the bench reaches the SQL through the API, not through its modules.
 */
export async function statementsOf(
  knex: Knex,
  databaseUrl: string,
  paths: readonly string[],
  headers: Record<string, string> = {},
): Promise<Statement[][]> {
  const config = loadConfig({ DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' });
  const api = await startApiServer({ config, knex, logger: createLogger('warn') }, 0, '127.0.0.1');
  let seen: Statement[] = [];
  const record = (query: { sql: string; bindings?: Statement['bindings'] }) =>
    seen.push({ sql: query.sql, bindings: query.bindings ?? [] });
  knex.on('query', record);
  try {
    const all: Statement[][] = [];
    for (const path of paths) {
      seen = [];
      const res = await request(`${api.url}${path}`, { headers: { accept: 'application/json', ...headers } });
      const text = await res.body.text();
      if (res.statusCode !== 200) throw new Error(`${path} answered ${res.statusCode}: ${text}`);
      all.push(seen);
    }
    return all;
  } finally {
    knex.off('query', record);
    await api.close();
  }
}

/** The statement for pg's own `query`: `$n` placeholders (the API's SQL holds no other `?`). */
export function forPg({ sql, bindings }: Statement): { text: string; values: unknown[] } {
  let position = 0;
  return { text: sql.replace(/\?/g, () => `$${++position}`), values: [...bindings] };
}

/** EXPLAIN ANALYZE of one statement: its SQL on one line, then the plan, as a Markdown code block. */
export async function explain(knex: Knex, statement: Statement): Promise<{ sql: string; plan: string; block: string }> {
  const rows = await runSql<{ 'QUERY PLAN': string }>(knex, {
    ...statement,
    sql: `EXPLAIN (ANALYZE, COSTS OFF, BUFFERS OFF) ${statement.sql}`,
  });
  const sql = statement.sql.replace(/\s+/g, ' ').trim();
  const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
  return { sql, plan, block: ['```text', sql, '', plan, '```'].join('\n') };
}
