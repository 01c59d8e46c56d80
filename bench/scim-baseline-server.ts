import http from 'node:http';
import pg from 'pg';
import { findPage, positionalSql, type PageRequest, type QueryRunner } from '../api/scim/engine/store';
import { groupQueries } from '../api/scim/groups/queries';
import { listenOnLoopback, serveInChild } from './server-child';

/**
 * The benchmark's baseline: bare node:http and a pg pool running the very SQL the API runs for each
 * query (the page, and the count when the page does not prove it), precompiled by the parent and passed
 * in SCIM_BENCH_QUERIES. GET /<name> answers the rows as JSON: no framework, no filter parsing, no SCIM
 * serialisation.
 */
void serveInChild(async () => {
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
  const queries: Record<string, PageRequest<boolean>> = JSON.parse(process.env.SCIM_BENCH_QUERIES ?? '{}');
  const run: QueryRunner = async <Row>(query: { sql: string; bindings: readonly unknown[] }) =>
    (await pool.query(positionalSql(query.sql), query.bindings as unknown[])).rows as Row[];
  const server = http.createServer((req, res) => {
    const request = queries[(req.url ?? '').slice(1)];
    if (!request) {
      res.writeHead(404).end();
      return;
    }
    findPage(run, groupQueries, request).then(
      (page) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(page)),
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
