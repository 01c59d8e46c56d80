import http from 'node:http';
import pg from 'pg';
import { listResponseText } from '../../api/scim/engine/list-response';
import { listenOnLoopback, serveInChild } from '../harness/server-child';
import { forPg, type Statement } from '../harness/statements';

/**
 * The benchmark's baseline: bare node:http and a pg pool running, for GET /<name>, the very statements the API
 * ran for that query (SCIM_BENCH_STATEMENTS: name → [page, count when the page does not prove the total], taken
 * from the API by statementsOf). It answers the rows as JSON: no framework, no filter parsing, no SCIM
 * serialisation. A page PostgreSQL renders (one `resource` column) is already the response's JSON: the baseline
 * answers those bytes with the least code, as the API does.
 */
void serveInChild(async () => {
  const queries: Record<string, Statement[]> = JSON.parse(process.env.SCIM_BENCH_STATEMENTS ?? '{}');
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
  const body = async ([page, count]: Statement[]): Promise<string> => {
    const { rows } = await pool.query(forPg(page));
    const totalResults = count ? (await pool.query(forPg(count))).rows[0].total : rows.length;
    const rendered = rows.length > 0 && Object.keys(rows[0]).join() === 'resource';
    return rendered
      ? listResponseText(
          rows.map((row) => row.resource),
          totalResults,
          1,
        )
      : JSON.stringify({ totalResults, rows });
  };
  const listening = await listenOnLoopback(
    http.createServer((req, res) => {
      const statements = queries[(req.url ?? '').slice(1)];
      if (!statements) return void res.writeHead(404).end();
      body(statements).then(
        (text) => res.writeHead(200, { 'content-type': 'application/json' }).end(text),
        () => res.writeHead(500).end(),
      );
    }),
  );
  return {
    url: listening.url,
    async close() {
      await listening.close();
      await pool.end();
    },
  };
});
