import http from 'node:http';
import pg from 'pg';
import { listResponseText } from '../api/scim/engine/list-response';
import { findPage, positionalSql, type QueryRunner, type RenderedRow } from '../api/scim/engine/store';
import { BENCH_RESOURCES, type BenchPlan } from './scim-resources';
import { listenOnLoopback, serveInChild } from './server-child';

/**
 * The benchmark's baseline: bare node:http and a pg pool running the very SQL the API runs for each
 * query (the page, and the count when the page does not prove it), precompiled by the parent and passed
 * in SCIM_BENCH_QUERIES. GET /<name> answers the rows as JSON: no framework, no filter parsing, no SCIM
 * serialisation. A page PostgreSQL renders (`renderedFor`) is already the response's JSON: the baseline
 * answers those bytes with the least code, as the API does.
 */
void serveInChild(async () => {
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
  const plans: Record<string, BenchPlan> = JSON.parse(process.env.SCIM_BENCH_QUERIES ?? '{}');
  const run: QueryRunner = async <Row>(query: { sql: string; bindings: readonly unknown[] }) =>
    (await pool.query(positionalSql(query.sql), query.bindings as unknown[])).rows as Row[];
  const server = http.createServer((req, res) => {
    const plan = plans[(req.url ?? '').slice(1)];
    if (!plan) {
      res.writeHead(404).end();
      return;
    }
    findPage(run, BENCH_RESOURCES[plan.endpoint].queries, plan.request).then(
      (page) => {
        const body = plan.request.renderedFor === undefined
          ? JSON.stringify(page)
          : listResponseText((page.rows as RenderedRow[]).map((row) => row.resource), page.totalResults, plan.request.startIndex);
        res.writeHead(200, { 'content-type': 'application/json' }).end(body);
      },
      () => res.writeHead(500).end(),
    );
  });
  const listening = await listenOnLoopback(server);
  return {
    url: listening.url,
    async close() {
      await listening.close();
      await pool.end();
    },
  };
});
