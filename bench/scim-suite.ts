import { performance } from 'node:perf_hooks';
import { planList } from '../api/scim/engine/handlers';
import type { SqlFragment } from '../db/sql';
import { findPage, knexRunner, type QueryRunner } from '../api/scim/engine/store';
import type { Knex } from '../db/database';
import { startServerChild } from './server-child';
import { cpuSeconds, postmasterPid, treeCpuSeconds } from './proc-stats';
import { profileApiUnderLoad, profileTable } from './api-profile';
import { drive, type LoadFigures } from './load';
import { quantiles } from './quantiles';
import { BENCH_RESOURCES, type BenchEndpoint, type BenchPlan } from './scim-resources';
import { apiPath, benchQueries, type BenchQuery } from './scim-queries';
import { SCIM_BENCH_GROUPS, SCIM_BENCH_USERS, seedScimDirectory } from './scim-seed';
import type { BenchmarkSuite } from './suite';

const CONCURRENT_CONNECTIONS = 8;
/** Profiling the API under load. */
const PROFILE_SECONDS = 5;
/** Throughput rounds per query, API and baseline in turn. */
const ROUNDS = 3;
const ROUND_SECONDS = 3;
const SINGLE_SECONDS = 4;
const SCIM_BASE = 'http://127.0.0.1/scim/v2';
/** The queries whose API process is profiled after the measurements: the widest gaps to the baseline. */
const PROFILED = ['page-100', 'members-value'];

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
    const plans = new Map<string, BenchPlan>(queries.map((q) => [
      q.name,
      { endpoint: q.endpoint, request: planList(BENCH_RESOURCES[q.endpoint].resource, q.query, SCIM_BASE).request },
    ]));
    progress('scim: EXPLAIN ANALYZE');
    const explained = await Promise.all(queries.map(async (q) => ({ query: q, statements: await explainStatements(knex, plans.get(q.name)!) })));

    const api = await startServerChild('api-process', { DATABASE_URL: databaseUrl });
    const baseline = await startServerChild('scim-baseline-server', {
      DATABASE_URL: databaseUrl,
      SCIM_BENCH_QUERIES: JSON.stringify(Object.fromEntries(plans)),
    });
    const rows: Record<BenchEndpoint, string[]> = { Groups: [], Users: [] };
    const singleRows: Record<BenchEndpoint, string[]> = { Groups: [], Users: [] };
    const cpuRows: Record<BenchEndpoint, string[]> = { Groups: [], Users: [] };
    const postmaster = await postmasterPid(knex);
    const clocks: CpuClocks = {
      api: { cpu: () => cpuSeconds(api.pid), gcPauseMs: () => api.gcPauseMs() },
      baseline: { cpu: () => cpuSeconds(baseline.pid), gcPauseMs: () => baseline.gcPauseMs() },
      postgres: () => (postmaster === undefined ? NaN : treeCpuSeconds(postmaster)),
    };
    const goals: string[] = [];
    const ratioGoals: string[] = [];
    try {
      for (const q of queries) {
        const apiUrl = `${api.url}${apiPath(q)}`;
        const baselineUrl = `${baseline.url}/${q.name}`;
        const total = await sameTotals(apiUrl, baselineUrl);
        progress(`scim: ${q.endpoint} ${q.label} (${total} results)`);
        const measured = await measureSideBySide(apiUrl, baselineUrl, clocks);
        const r = measured.concurrentRatio;
        rows[q.endpoint].push(tableRow(q, total, measured.api.concurrent, measured.baseline.concurrent, r, measured.roundRatios));
        ratioGoals.push(`- ${q.endpoint} \`${q.label}\`: ${r.toFixed(2)}× the baseline with ${CONCURRENT_CONNECTIONS} connections ` +
          `(median of ${ROUNDS} rounds: ${measured.roundRatios.map((x) => x.toFixed(2)).join(', ')}), ` +
          `${r >= RATIO_GOAL ? 'met' : '**not met**'} (goal ≥ ${RATIO_GOAL}×).`);
        singleRows[q.endpoint].push(tableRow(q, total, measured.api.single, measured.baseline.single));
        cpuRows[q.endpoint].push(cpuRow(q, measured.cpu.api.perRequest(), measured.cpu.baseline.perRequest()));
        if (q.goalP50Ms !== undefined) {
          const met = (p50: number) => (p50 <= q.goalP50Ms! ? 'met' : '**not met**');
          goals.push(`- ${q.endpoint} \`${q.label}\` p50 ≤ ${q.goalP50Ms} ms: ${met(measured.api.single.p50Ms)} with one connection ` +
            `(${milliseconds(measured.api.single.p50Ms)} ms), ${met(measured.api.concurrent.p50Ms)} with ${CONCURRENT_CONNECTIONS} ` +
            `(${milliseconds(measured.api.concurrent.p50Ms)} ms).`);
        }
      }
    } finally {
      await api.stop();
      await baseline.stop();
    }
    // Profiled last, in a fresh API process, so the profiler's overhead never touches the figures above.
    const profiled = [];
    for (const q of queries.filter((query) => PROFILED.includes(query.name))) {
      progress(`scim: profiling the API on ${q.endpoint} ${q.label}`);
      const profile = await profileApiUnderLoad(databaseUrl, apiPath(q), CONCURRENT_CONNECTIONS, PROFILE_SECONDS);
      profiled.push(profileTable(profile, `${q.endpoint} \`${q.label}\` at ${CONCURRENT_CONNECTIONS} connections`));
    }

    const tables = (byEndpoint: Record<BenchEndpoint, string[]>, header: string) =>
      (Object.keys(byEndpoint) as BenchEndpoint[]).flatMap((endpoint) => [`#### ${endpoint}`, '', header, ...byEndpoint[endpoint], '']);
    const header = '| Query | Results | API req/s | API p50 ms | API p99 ms | Baseline req/s | Baseline p50 ms | Baseline p99 ms | API / baseline |';
    const singleHeader = `${header}\n|---|---:|---:|---:|---:|---:|---:|---:|---:|`;
    const cpuHeader = '| Query | API process µs | API GC pauses µs | PostgreSQL µs (API) | Baseline process µs | Baseline GC pauses µs | PostgreSQL µs (baseline) | Extra per API request µs (server + PostgreSQL) |\n|---|---:|---:|---:|---:|---:|---:|---:|';
    const roundsHeader = `${header} Rounds |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---|`;
    const unindexed = explained.flatMap((e) => e.statements.filter((s) => !s.indexed).map((s) => ({ ...s, label: e.query.label })));
    const everyIndexed = unindexed.length === 0;
    return [
      '## SCIM Groups and Users (`GET /scim/v2/Groups`, `GET /scim/v2/Users`)',
      '',
      `Directory: ${SCIM_BENCH_GROUPS.toLocaleString('en')} groups, ${(SCIM_BENCH_GROUPS * 10).toLocaleString('en')} memberships ` +
        `(${(SCIM_BENCH_GROUPS * 9.5).toLocaleString('en')} of users, ${(SCIM_BENCH_GROUPS / 2).toLocaleString('en')} of groups), ` +
        `${SCIM_BENCH_USERS.toLocaleString('en')} users with two e-mail addresses each; seeded with set-based SQL in ${seedSeconds.toFixed(1)} s. ` +
        'The API is the real server (api/server.ts) in its own process; the baseline is node:http + pg in another process ' +
        'running the same SQL statements (the page with its members, and the count when the page does not prove it) without Koa, ' +
        'filter parsing or SCIM serialisation. A Groups page that PostgreSQL renders as JSON text (projection at most without members) ' +
        'is answered by both with the same bytes. autocannon drives both over 127.0.0.1, one query at a time.',
      '',
      `### ${CONCURRENT_CONNECTIONS} connections, ${ROUNDS} rounds of ${ROUND_SECONDS} s each, API and baseline in turn`,
      '',
      'req/s is the mean of the rounds, p50 their median, p99 their worst; API / baseline is the median of the rounds\' ratios, listed in Rounds.',
      '',
      ...tables(rows, roundsHeader),
      `### 1 connection, ${SINGLE_SECONDS} s each (latency without queueing)`,
      '',
      ...tables(singleRows, singleHeader),
      `### CPU per request at ${CONCURRENT_CONNECTIONS} connections (from /proc, over the rounds)`,
      '',
      'Microseconds of CPU each request cost the server process and PostgreSQL (postmaster and all backends). ' +
        'Both servers share the machine\'s cores with PostgreSQL and autocannon, so a server\'s extra CPU per request is what separates the two. ' +
        'GC pauses are the time the server\'s main thread stood still for garbage collection (`gc` performance entries), per request.',
      '',
      ...tables(cpuRows, cpuHeader),
      '',
      '### Goals',
      '',
      ...goals,
      ...ratioGoals,
      everyIndexed
        ? '- Every statement is served through an index (plans below).'
        : `- Statements not served through an index: ${unindexed.map((s) => `${s.role} of \`${s.label}\``).join('; ')}.`,
      '- The unfiltered total reads the one-row counters `scim_group_total` and `scim_user_total` that statement-level ' +
        'triggers keep exact (migrations 003 and 010), instead of counting 100k groups or 50k users per request.',
      '',
      '### Where the API spends its CPU (`node --cpu-prof`)',
      '',
      ...profiled.flatMap((table) => [table, '']),
      '### Query plans (EXPLAIN ANALYZE of each statement the API runs)',
      '',
      ...explained.flatMap(({ query, statements }) => [
        `#### ${query.endpoint} ${query.label}: \`${new URLSearchParams(query.query).toString()}\``,
        '',
        ...statements.flatMap((s) => [`${s.role}, index used: ${s.indexed ? 'yes' : '**no**'}`, '', '```text', s.sql, '', s.plan, '```', '']),
      ]),
    ].join('\n');
  },
};

/**
 * Latency with one connection, then throughput with 8 in ROUNDS rounds that take the API and the baseline in
 * turn, so drift in the machine's load (this is a shared 2-core VM) touches both alike; the ratio is the
 * median of the rounds' ratios.
 */
async function measureSideBySide(apiUrl: string, baselineUrl: string, cpu: CpuClocks) {
  const headers = { accept: 'application/json' };
  const run = async (url: string, connections: number, seconds: number) => {
    const figures = await drive(url, headers, connections, seconds);
    if (figures.non2xx || figures.errors) throw new Error(`${url}: ${figures.non2xx} non-2xx answers, ${figures.errors} errors`);
    return figures;
  };
  for (const url of [apiUrl, baselineUrl]) await run(url, CONCURRENT_CONNECTIONS, 1); // warm-up
  const single = { api: await run(apiUrl, 1, SINGLE_SECONDS), baseline: await run(baselineUrl, 1, SINGLE_SECONDS) };
  const rounds: Array<{ api: LoadFigures; baseline: LoadFigures }> = [];
  const spent = { api: new CpuPerRequest(), baseline: new CpuPerRequest() };
  for (let i = 0; i < ROUNDS; i++) {
    const api = await spent.api.during(cpu.api, cpu.postgres, () => run(apiUrl, CONCURRENT_CONNECTIONS, ROUND_SECONDS));
    const baseline = await spent.baseline.during(cpu.baseline, cpu.postgres, () => run(baselineUrl, CONCURRENT_CONNECTIONS, ROUND_SECONDS));
    rounds.push({ api, baseline });
  }
  const roundRatios = rounds.map((round) => round.api.reqPerSec / round.baseline.reqPerSec);
  return {
    api: { single: single.api, concurrent: combined(rounds.map((round) => round.api)) },
    baseline: { single: single.baseline, concurrent: combined(rounds.map((round) => round.baseline)) },
    roundRatios,
    concurrentRatio: median(roundRatios),
    cpu: spent,
  };
}

/** A server process's CPU seconds and GC pauses (ms) so far. */
interface ServerClocks {
  readonly cpu: () => number;
  readonly gcPauseMs: () => Promise<number>;
}

/** The servers' clocks and PostgreSQL's CPU seconds so far (NaN when PostgreSQL is not local). */
interface CpuClocks {
  readonly api: ServerClocks;
  readonly baseline: ServerClocks;
  readonly postgres: () => number;
}

/** Microseconds per request, summed over the rounds that drove one server. */
interface SpentPerRequest {
  readonly server: number;
  readonly gcPauses: number;
  readonly postgres: number;
}

/** CPU of a server and of PostgreSQL, and the server's GC pauses, summed over the rounds that drove it. */
class CpuPerRequest {
  private server = 0;
  private gcPauseMs = 0;
  private postgres = 0;
  private requests = 0;

  async during(server: ServerClocks, postgres: () => number, drive: () => Promise<LoadFigures>): Promise<LoadFigures> {
    const before = { server: server.cpu(), gcPauseMs: await server.gcPauseMs(), postgres: postgres() };
    const figures = await drive();
    this.server += server.cpu() - before.server;
    this.gcPauseMs += (await server.gcPauseMs()) - before.gcPauseMs;
    this.postgres += postgres() - before.postgres;
    this.requests += figures.requests;
    return figures;
  }

  perRequest(): SpentPerRequest {
    return {
      server: (this.server * 1e6) / this.requests,
      gcPauses: (this.gcPauseMs * 1e3) / this.requests,
      postgres: (this.postgres * 1e6) / this.requests,
    };
  }
}

/** Rounds as one figure: mean req/s, median p50, worst p99. */
function combined(rounds: readonly LoadFigures[]): LoadFigures {
  const sum = (pick: (f: LoadFigures) => number) => rounds.reduce((total, f) => total + pick(f), 0);
  return {
    reqPerSec: sum((f) => f.reqPerSec) / rounds.length,
    p50Ms: median(rounds.map((f) => f.p50Ms)),
    p99Ms: Math.max(...rounds.map((f) => f.p99Ms)),
    non2xx: sum((f) => f.non2xx),
    errors: sum((f) => f.errors),
    requests: sum((f) => f.requests),
  };
}

const median = (values: readonly number[]) => quantiles(values).p50;

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

function tableRow(q: BenchQuery, total: number, api: LoadFigures, baseline: LoadFigures, ratio = api.reqPerSec / baseline.reqPerSec, rounds?: readonly number[]): string {
  const cells = (f: LoadFigures) => [Math.round(f.reqPerSec), milliseconds(f.p50Ms), milliseconds(f.p99Ms)];
  const roundCell = rounds ? ` ${rounds.map((x) => x.toFixed(2)).join(', ')} |` : '';
  return `| \`${q.label}\` | ${total} | ${[...cells(api), ...cells(baseline)].join(' | ')} | ${ratio.toFixed(2)} |${roundCell}`;
}

function cpuRow(q: BenchQuery, api: SpentPerRequest, baseline: SpentPerRequest): string {
  const us = (value: number) => (Number.isFinite(value) ? String(Math.round(value)) : 'n/a');
  const cells = (spent: SpentPerRequest) => [us(spent.server), us(spent.gcPauses), us(spent.postgres)];
  const extra = api.server + api.postgres - baseline.server - baseline.postgres;
  return `| \`${q.label}\` | ${[...cells(api), ...cells(baseline)].join(' | ')} | ${us(extra)} |`;
}

/** The goal of issue 11: at least 0.8 times the baseline's throughput with 8 connections. */
const RATIO_GOAL = 0.8;

interface ExplainedStatement {
  readonly role: string;
  readonly sql: string;
  readonly plan: string;
  readonly indexed: boolean;
}

/** Runs the request once, recording its statements, then EXPLAIN ANALYZEs each one with its bindings. */
async function explainStatements(knex: Knex, { endpoint, request }: BenchPlan): Promise<ExplainedStatement[]> {
  const executed: SqlFragment[] = [];
  const run = knexRunner(knex);
  const recording: QueryRunner = async <Row>(query: SqlFragment) => {
    executed.push(query);
    return run<Row>(query);
  };
  await findPage(recording, BENCH_RESOURCES[endpoint].queries, request);
  return Promise.all(executed.map(async (query) => {
    const { rows } = await knex.raw<{ rows: Array<{ 'QUERY PLAN': string }> }>(
      `EXPLAIN (ANALYZE, COSTS OFF, BUFFERS OFF) ${query.sql}`,
      query.bindings as Knex.RawBinding[],
    );
    const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
    const role = /count\(\*\)|scim_(group|user)_total/.test(query.sql) ? 'Count' : 'Page';
    return {
      role,
      sql: query.sql.replace(/\s+/g, ' '),
      plan,
      // Reading the one-row counter is O(1) whatever the plan; any other statement must use an index.
      indexed: /FROM scim_(group|user)_total$/.test(query.sql.trim())
        || (/Index (Only )?Scan|Bitmap Index Scan/.test(plan) && !/Seq Scan on (scim_|users)/.test(plan)),
    };
  }));
}
