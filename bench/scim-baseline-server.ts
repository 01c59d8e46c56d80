import http from 'node:http';
import Koa from 'koa';
import pg from 'pg';
import { createKnex } from '../db/database';
import { listResponseText } from '../api/scim/engine/list-response';
import { findPage, knexRunner, type QueryRunner, type RenderedRow } from '../api/scim/engine/store';
import { positionalSql } from '../db/sql';
import { BENCH_RESOURCES, type BenchPlan } from './scim-resources';
import { listenOnLoopback, serveInChild } from './server-child';

/**
 * The benchmark's baseline: bare node:http and a pg pool running the very SQL the API runs for each
 * query (the page, and the count when the page does not prove it), precompiled by the parent and passed
 * in SCIM_BENCH_QUERIES. GET /<name> answers the rows as JSON: no framework, no filter parsing, no SCIM
 * serialisation. A page PostgreSQL renders (`renderedFor`) is already the response's JSON: the baseline
 * answers those bytes with the least code, as the API does.
 *
 * SCIM_BASELINE_STACK (`http+pg` by default) puts the same work on the API's own parts instead, to split the
 * API's cost over the baseline's (bench/scim-overhead.ts): `koa` is a one-middleware Koa app, `knex` runs
 * on a pg client from knex's pool as the API's knexRunner does.
 */
void serveInChild(async () => {
  const [transport, pool] = (process.env.SCIM_BASELINE_STACK ?? 'http+pg').split('+');
  if (!['http', 'koa'].includes(transport) || !['pg', 'knex'].includes(pool)) {
    throw new Error(`SCIM_BASELINE_STACK must be http+pg, http+knex, koa+pg or koa+knex, not ${process.env.SCIM_BASELINE_STACK}`);
  }
  const plans: Record<string, BenchPlan> = JSON.parse(process.env.SCIM_BENCH_QUERIES ?? '{}');
  const knex = pool === 'knex' ? createKnex(process.env.DATABASE_URL!) : undefined;
  const pgPool = knex ? undefined : new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
  const run: QueryRunner = knex
    ? knexRunner(knex)
    : async <Row>(query: { sql: string; bindings: readonly unknown[] }) =>
        (await pgPool!.query(positionalSql(query.sql), query.bindings as unknown[])).rows as Row[];
  const body = async (plan: BenchPlan): Promise<string> => {
    const page = await findPage(run, BENCH_RESOURCES[plan.endpoint].queries, plan.request);
    return plan.request.renderedFor === undefined
      ? JSON.stringify(page)
      : listResponseText((page.rows as RenderedRow[]).map((row) => row.resource), page.totalResults, plan.request.startIndex);
  };
  const planAt = (url: string | undefined) => plans[(url ?? '').slice(1)];

  let handler: http.RequestListener;
  if (transport === 'koa') {
    const app = new Koa();
    app.use(async function answerPlan(ctx) {
      const plan = planAt(ctx.url);
      if (!plan) return; // Koa answers 404
      ctx.body = await body(plan);
      ctx.type = 'application/json';
    });
    handler = app.callback();
  } else {
    handler = (req, res) => {
      const plan = planAt(req.url);
      if (!plan) {
        res.writeHead(404).end();
        return;
      }
      body(plan).then(
        (text) => res.writeHead(200, { 'content-type': 'application/json' }).end(text),
        () => res.writeHead(500).end(),
      );
    };
  }
  const listening = await listenOnLoopback(http.createServer(handler));
  return {
    url: listening.url,
    async close() {
      await listening.close();
      await knex?.destroy();
      await pgPool?.end();
    },
  };
});
