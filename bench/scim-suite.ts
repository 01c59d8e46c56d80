import { performance } from 'node:perf_hooks';
import { planList } from '../api/scim/engine/handlers';
import type { SqlFragment } from '../api/scim/engine/sql-fragment';
import { findPage, knexRunner, type PageRequest, type QueryRunner } from '../api/scim/engine/store';
import { groupQueries } from '../api/scim/groups/queries';
import { groupResource } from '../api/scim/groups/resource';
import type { Knex } from '../db/database';
import { startServerChild } from './server-child';
import { drive, type LoadFigures } from './load';
import { benchDisplayName, benchGroupId, benchMemberUser, SCIM_BENCH_GROUPS, SCIM_BENCH_USERS, seedScimDirectory } from './scim-seed';
import type { BenchmarkSuite } from './suite';

const CONCURRENT_CONNECTIONS = 8;
const CONCURRENT_SECONDS = 5;
const SINGLE_SECONDS = 4;
const SCIM_BASE = 'http://127.0.0.1/scim/v2';

interface BenchQuery {
  readonly name: string;
  readonly label: string;
  readonly query: Record<string, string>;
  readonly goalP50Ms?: number;
}

function benchQueries(): BenchQuery[] {
  const target = 42_317;
  const member = benchMemberUser(target, 3);
  return [
    { name: 'displayName-eq', label: 'displayName eq', query: { filter: `displayName eq "${benchDisplayName(target)}"` }, goalP50Ms: 5 },
    { name: 'displayName-co', label: 'displayName co', query: { filter: 'displayName co "4231"' } },
    { name: 'members-value', label: 'members[value eq]', query: { filter: `members[value eq "${member}"]` } },
    {
      name: 'membership-check',
      label: 'id eq and members eq',
      query: { filter: `id eq "${benchGroupId(target)}" and members eq "${member}"` },
      goalP50Ms: 10,
    },
    { name: 'page-100', label: 'page of 100, excludedAttributes=members', query: { count: '100', excludedAttributes: 'members' } },
  ];
}

/**
 * SCIM GET /Groups on 100k groups and 1M memberships: the real API (api/server.ts, own process) side by
 * side with a bare node:http + pg baseline (own process) running the same SQL, driven by autocannon.
 */
export const scimSuite: BenchmarkSuite = {
  name: 'scim',
  async run({ databaseUrl, knex, progress }) {
    progress(`scim: seeding ${SCIM_BENCH_GROUPS} groups, ${SCIM_BENCH_GROUPS * 10} memberships, ${SCIM_BENCH_USERS} users`);
    const seedStart = performance.now();
    await seedScimDirectory(knex);
    const seedSeconds = (performance.now() - seedStart) / 1000;

    const queries = benchQueries();
    const plans = new Map(queries.map((q) => [q.name, planList(groupResource, q.query, SCIM_BASE).request]));
    progress('scim: EXPLAIN ANALYZE');
    const explained = await Promise.all(queries.map(async (q) => ({ query: q, statements: await explainStatements(knex, plans.get(q.name)!) })));

    const api = await startServerChild('api-process', { DATABASE_URL: databaseUrl });
    const baseline = await startServerChild('scim-baseline-server', {
      DATABASE_URL: databaseUrl,
      SCIM_BENCH_QUERIES: JSON.stringify(Object.fromEntries(plans)),
    });
    const rows: string[] = [];
    const singleRows: string[] = [];
    const goals: string[] = [];
    try {
      for (const q of queries) {
        const apiUrl = `${api.url}/scim/v2/Groups?${new URLSearchParams(q.query)}`;
        const baselineUrl = `${baseline.url}/${q.name}`;
        const total = await sameTotals(apiUrl, baselineUrl);
        progress(`scim: ${q.label} (${total} results)`);
        const measured = {
          api: await measure(apiUrl),
          baseline: await measure(baselineUrl),
        };
        rows.push(tableRow(q, total, measured.api.concurrent, measured.baseline.concurrent));
        singleRows.push(tableRow(q, total, measured.api.single, measured.baseline.single));
        if (q.goalP50Ms !== undefined) {
          const met = (p50: number) => (p50 <= q.goalP50Ms! ? 'met' : '**not met**');
          goals.push(`- \`${q.label}\` p50 ≤ ${q.goalP50Ms} ms: ${met(measured.api.single.p50Ms)} with one connection ` +
            `(${milliseconds(measured.api.single.p50Ms)} ms), ${met(measured.api.concurrent.p50Ms)} with ${CONCURRENT_CONNECTIONS} ` +
            `(${milliseconds(measured.api.concurrent.p50Ms)} ms).`);
        }
      }
    } finally {
      await api.stop();
      await baseline.stop();
    }

    const header = '| Query | Results | API req/s | API p50 ms | API p99 ms | Baseline req/s | Baseline p50 ms | Baseline p99 ms |\n|---|---:|---:|---:|---:|---:|---:|---:|';
    const unindexed = explained.flatMap((e) => e.statements.filter((s) => !s.indexed).map((s) => ({ ...s, label: e.query.label })));
    const everyIndexed = unindexed.length === 0;
    return [
      '## SCIM Groups (`GET /scim/v2/Groups`)',
      '',
      `Directory: ${SCIM_BENCH_GROUPS.toLocaleString('en')} groups, ${(SCIM_BENCH_GROUPS * 10).toLocaleString('en')} memberships ` +
        `(${(SCIM_BENCH_GROUPS * 9.5).toLocaleString('en')} of users, ${(SCIM_BENCH_GROUPS / 2).toLocaleString('en')} of groups), ` +
        `${SCIM_BENCH_USERS.toLocaleString('en')} users; seeded with set-based SQL in ${seedSeconds.toFixed(1)} s. ` +
        'The API is the real server (api/server.ts) in its own process; the baseline is node:http + pg in another process ' +
        'running the same SQL statements (the page with its members, and the count when the page does not prove it) without Koa, ' +
        'filter parsing or SCIM serialisation. autocannon drives both over 127.0.0.1, one query at a time.',
      '',
      `### ${CONCURRENT_CONNECTIONS} connections, ${CONCURRENT_SECONDS} s each`,
      '',
      header,
      ...rows,
      '',
      `### 1 connection, ${SINGLE_SECONDS} s each (latency without queueing)`,
      '',
      header,
      ...singleRows,
      '',
      '### Goals',
      '',
      ...goals,
      everyIndexed
        ? '- Every statement is served through an index (plans below).'
        : `- Statements not served through an index: ${unindexed.map((s) => `${s.role} of \`${s.label}\``).join('; ')}.`,
      '- The unfiltered total reads the one-row counter `scim_group_total` that statement-level triggers keep exact ' +
        '(migration 003), instead of counting 100k rows per request.',
      '',
      '### Query plans (EXPLAIN ANALYZE of each statement the API runs)',
      '',
      ...explained.flatMap(({ query, statements }) => [
        `#### ${query.label}: \`${new URLSearchParams(query.query).toString()}\``,
        '',
        ...statements.flatMap((s) => [`${s.role}, index used: ${s.indexed ? 'yes' : '**no**'}`, '', '```text', s.sql, '', s.plan, '```', '']),
      ]),
    ].join('\n');
  },
};

async function measure(url: string) {
  const headers = { accept: 'application/json' };
  await drive(url, headers, CONCURRENT_CONNECTIONS, 1); // warm-up
  const single = await drive(url, headers, 1, SINGLE_SECONDS);
  const concurrent = await drive(url, headers, CONCURRENT_CONNECTIONS, CONCURRENT_SECONDS);
  for (const figures of [single, concurrent]) {
    if (figures.non2xx || figures.errors) throw new Error(`${url}: ${figures.non2xx} non-2xx answers, ${figures.errors} errors`);
  }
  return { single, concurrent };
}

/** Both servers must agree on the total before their speeds are compared. */
async function sameTotals(apiUrl: string, baselineUrl: string): Promise<number> {
  const apiBody = (await (await fetch(apiUrl, { headers: { accept: 'application/json' } })).json()) as { totalResults: number };
  const baselineBody = (await (await fetch(baselineUrl)).json()) as { totalResults: number };
  if (apiBody.totalResults !== baselineBody.totalResults) {
    throw new Error(`API and baseline disagree on ${apiUrl}: ${apiBody.totalResults} vs ${baselineBody.totalResults}`);
  }
  return apiBody.totalResults;
}

/** autocannon reports whole milliseconds; 0 means under one. */
const milliseconds = (ms: number) => (ms === 0 ? '<1' : String(ms));

function tableRow(q: BenchQuery, total: number, api: LoadFigures, baseline: LoadFigures): string {
  const cells = (f: LoadFigures) => [Math.round(f.reqPerSec), milliseconds(f.p50Ms), milliseconds(f.p99Ms)];
  return `| \`${q.label}\` | ${total} | ${[...cells(api), ...cells(baseline)].join(' | ')} |`;
}

interface ExplainedStatement {
  readonly role: string;
  readonly sql: string;
  readonly plan: string;
  readonly indexed: boolean;
}

/** Runs the request once, recording its statements, then EXPLAIN ANALYZEs each one with its bindings. */
async function explainStatements(knex: Knex, request: PageRequest<boolean>): Promise<ExplainedStatement[]> {
  const executed: SqlFragment[] = [];
  const run = knexRunner(knex);
  const recording: QueryRunner = async <Row>(query: SqlFragment) => {
    executed.push(query);
    return run<Row>(query);
  };
  await findPage(recording, groupQueries, request);
  return Promise.all(executed.map(async (query) => {
    const { rows } = await knex.raw<{ rows: Array<{ 'QUERY PLAN': string }> }>(
      `EXPLAIN (ANALYZE, COSTS OFF, BUFFERS OFF) ${query.sql}`,
      query.bindings as Knex.RawBinding[],
    );
    const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
    const role = /count\(\*\)|scim_group_total/.test(query.sql) ? 'Count' : 'Page';
    return {
      role,
      sql: query.sql.replace(/\s+/g, ' '),
      plan,
      // Reading the one-row counter is O(1) whatever the plan; any other statement must use an index.
      indexed: /FROM scim_group_total$/.test(query.sql.trim())
        || (/Index (Only )?Scan|Bitmap Index Scan/.test(plan) && !/Seq Scan on scim_/.test(plan)),
    };
  }));
}
