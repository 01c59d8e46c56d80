import pg from 'pg';
import { request } from 'undici';
import { startApiServer } from '../../api/server';
import { reportDataAtRest } from '../../application/personal-data/at-rest-report';
import { bulkRedeliveryKey, redeliverMatching } from '../../application/webhooks/webhook-operations';
import { createKnex, ensureDatabase, type Knex } from '../../db/database';
import { migrateLatest } from '../../db/migrate';
import { raw, runSql } from '../../db/sql';
import { dataAtRest } from '../../lib/at-rest';
import { loadConfig, type Config } from '../../lib/config';
import { createLogger } from '../../lib/logger';
import { findRedeliveryCandidates, type LogPosition } from '../../store/webhooks/delivery-log';
import { registerDevelopmentIndexKey } from '../../store/personal-data/subject-index-keys';
import { createTemporalGateway } from '../../temporal/gateway';
import { withCleanups, type Cleanups } from '../harness/cleanups';
import { startPartnerServer, type PartnerServer } from '../harness/partner';
import { table, verdict } from '../harness/render';
import { spawnService, type ServiceProcess } from '../harness/service';
import { median, quantiles } from '../harness/stats';
import type { BenchmarkSuite } from '../harness/suite';
import { benchTemporalBinary, startBenchTemporal } from '../harness/temporal';
import { ingest, INTERNAL_API_TOKEN, serviceEnv } from '../harness/webhook-part';
import { findFreePort } from '../../lib/ports';
import { LOG_DAYS, PAYLOAD_DAYS, seedYear, type SeedFigures } from './seed';
import type { Statement } from '../harness/statements';
import { grantPartnerApp, partnerGet, partnerPlans, partnerReads, servedReads } from './partner-reads';

/** Webhooks seeded, smallest first (BENCH_YEAR_SIZES); timed requests per operation (BENCH_YEAR_REPEATS); the growth goal. */
const SIZES = (process.env.BENCH_YEAR_SIZES ?? '30000,300000,3000000').split(',').map(Number);
const [REPEATS, GOAL, PAGE] = [Number(process.env.BENCH_YEAR_REPEATS ?? 15), 1.5, '10'];
/** Rows a bulk redelivery matches: the same at every size (its growth), and the issue's 100,000 where the size holds them. */
const [MATCHES, MANY_MATCHES, MANY_GOAL_MS, API_LIMIT] = [10_000, 100_000, 2_000, 10_000];
/** The key the seed seals under, and one that does not list it (a rotation that dropped the key too early). */
const KEY = `year:${Buffer.alloc(32, 7).toString('base64')}`;
const OTHER_KEY = `other:${Buffer.alloc(32, 9).toString('base64')}`;
/** The indexes migration 023 builds, rebuilt CONCURRENTLY at the largest size for docs/operations.md. */
const INDEXES_023 = [
  'webhook_attempts_resting_key',
  'webhook_events_resting_key',
  'webhook_events_company_status',
  'webhook_events_redeliveries',
  'audit_events_action',
];

type Timings = Map<string, number>;
interface SizeRun {
  readonly n: number;
  readonly seed: SeedFigures;
  readonly ms: Timings;
  readonly notes: Map<string, string>;
}

/**
 * A year of data at 30,000, 300,000 and 3,000,000 webhooks (bench/year/seed.ts), each in a database of its own on
 * one PostgreSQL server, with one Temporal dev server: at each size the same operations, through the real API and
 * worker processes where a user meets them; each operation's growth from the smallest size to the largest.
 */
export const yearSuite: BenchmarkSuite = {
  name: 'year',
  title: 'A year of data: 30,000 to 3,000,000 webhooks',
  run: ({ serverUrl, progress }) =>
    withCleanups('year', progress, async (cleanups) => {
      const executable = benchTemporalBinary();
      const temporal = await startBenchTemporal(executable, { tmpfs: true });
      cleanups.push(() => temporal.stop());
      const partner = await startPartnerServer();
      cleanups.push(() => partner.close());
      // Every size seeded and served at once, so that each quick operation is timed round-robin across the sizes:
      // a drift of the machine's speed during the run falls on every size alike.
      const rigs: SizeRig[] = [];
      for (const n of SIZES)
        rigs.push(await prepareSize(serverUrl, n, temporal.server.address, partner, cleanups, progress));
      const runs: SizeRun[] = rigs.map(({ n, seed }) => ({ n, seed, ms: new Map(), notes: new Map() }));
      const day = 86_400_000;
      const iso = (daysAgo: number) => new Date(Date.now() - daysAgo * day).toISOString();
      const each = async (op: string, count: number, time: (rig: SizeRig) => Promise<number | undefined>) => {
        const times = rigs.map(() => [] as number[]);
        for (let k = 0; k < count + 2; k++) {
          for (const [r, rig] of rigs.entries()) {
            const ms = await time(rig);
            if (k >= 2 && ms !== undefined) times[r].push(ms);
          }
        }
        times.forEach((values, r) => runs[r].ms.set(op, median(values)));
      };
      progress("year: the partner API's reads");
      const reads = await servedReads(rigs[0].api.url, partnerReads(iso));
      for (const [label, path] of reads)
        await each(label, REPEATS, (rig) => partnerGet(rig.api.url, path).then((r) => r.ms));
      const largest = rigs[rigs.length - 1];
      runs[runs.length - 1].notes.set('partner plans', await partnerPlans(largest.knex, largest.api.url, reads));
      if (process.env.BENCH_YEAR_PARTNER_ONLY) return report(runs);
      progress("year: the worker's start, its at-rest report");
      await each('worker: start until it polls', 3, (rig) => workerStart(rig.env, cleanups));
      const silent = createLogger('silent');
      await each('worker: at-rest report, key listed (not awaited)', 5, (rig) =>
        elapsed(() => reportDataAtRest(rig.knex, rig.config, silent)),
      );
      await each('worker: at-rest report, key no longer listed (not awaited)', 3, (rig) =>
        elapsed(() =>
          reportDataAtRest(rig.knex, loadConfig({ ...rig.env, PAYLOAD_ENCRYPTION_KEYS: OTHER_KEY }), silent),
        ),
      );
      // A worker per size for the erasures, polling (and its start's CPU spent) before anything more is timed.
      for (const rig of rigs) await pollingWorker(rig.env, cleanups);
      await new Promise((resolve) => setTimeout(resolve, 5_000));

      progress('year: the delivery log, the partner status, the audit list');
      const get = (path: string) => (rig: SizeRig) => call(rig.api.url, 'GET', path).then((r) => r.ms);
      // Pages of 10, which every filter below fills at every size: a page's cost grows with its rows up to its size.
      for (const [label, query] of deliveryLogFilters(iso))
        await each(
          `delivery log: ${label}`,
          REPEATS,
          get(`/internal/v1/webhooks?${new URLSearchParams({ ...query, limit: PAGE })}`),
        );
      await each('partner status', REPEATS, get('/internal/v1/partner'));
      for (const [label, query] of auditFilters(iso))
        await each(
          `audit list: ${label}`,
          REPEATS,
          get(`/internal/v1/audit?${new URLSearchParams({ ...query, limit: PAGE })}`),
        );
      progress('year: erasures');
      let candidate = 0;
      await each('erasure: 202', 5, async (rig) => (await timeErasure(rig.api.url, `c-${++candidate}`)).accepted);
      candidate = 100;
      await each(
        'erasure: completion',
        5,
        async (rig) => (await timeErasure(rig.api.url, `c-${++candidate}`)).completed,
      );

      progress('year: bulk redelivery previews');
      // A window of the newest third (bodies kept), ending a day ago, that holds `rows` webhooks.
      const window = (n: number, rows: number) => {
        const until = Date.now() - day;
        return {
          since: new Date(until - rows * ((LOG_DAYS * day) / n)).toISOString(),
          until: new Date(until).toISOString(),
        };
      };
      // The API's most per call (a repeated call goes on where the last stopped); the redelivery below uses the same.
      const preview = (n: number, rows: number, allowExpiredLinks = true) => ({
        ...window(n, rows),
        allow_expired_links: allowExpiredLinks,
        limit: Math.min(rows, API_LIMIT),
        dry_run: true,
      });
      const previewOf = (rig: SizeRig, rows: number, allowExpiredLinks = true) =>
        call(rig.api.url, 'POST', '/internal/v1/webhooks/redeliver', preview(rig.n, rows, allowExpiredLinks));
      await each(`bulk redelivery: preview of ${MATCHES.toLocaleString('en')} rows`, 5, (rig) =>
        previewOf(rig, MATCHES).then((r) => r.ms),
      );
      await each(`bulk redelivery: preview of ${MATCHES.toLocaleString('en')} rows, counting expired links`, 3, (rig) =>
        previewOf(rig, MATCHES, false).then((r) => r.ms),
      );
      // No filter: every finished webhook of the size matches, and `limit` alone bounds what the dry run reads and opens.
      const unfiltered = { allow_expired_links: false, limit: API_LIMIT, dry_run: true };
      await each(
        `bulk redelivery: preview of every finished webhook, limit ${API_LIMIT.toLocaleString('en')}, counting expired links`,
        3,
        (rig) => call(rig.api.url, 'POST', '/internal/v1/webhooks/redeliver', unfiltered).then((r) => r.ms),
      );
      for (const [r, rig] of rigs.entries()) {
        const { ms, notes } = runs[r];
        // One window for the preview and the redelivery: taken again seconds later it would slide past a row or two.
        const range = window(rig.n, MATCHES);
        const previewed = JSON.parse(
          (
            await call(rig.api.url, 'POST', '/internal/v1/webhooks/redeliver', {
              ...range,
              allow_expired_links: true,
              limit: API_LIMIT,
              dry_run: true,
            })
          ).text,
        ) as { would_start: number };
        progress(`year ${rig.n}: a bulk redelivery of ${previewed.would_start.toLocaleString('en')} webhooks`);
        // Its candidate queries first, as PostgreSQL times them: the same statements the redelivery then sends.
        ms.set(
          `bulk redelivery: ${MATCHES.toLocaleString('en')} rows, PostgreSQL's time for its candidate queries`,
          (await timeCandidatePages(rig.knex, range)).pgMs,
        );
        const redelivery = await timeRedelivery(rig, range, cleanups);
        ms.set(
          `bulk redelivery: ${MATCHES.toLocaleString('en')} rows, wall time (its workflow starts)`,
          redelivery.wallMs,
        );
        if (previewed.would_start !== redelivery.started)
          throw new Error(
            `the preview said ${previewed.would_start} would start, the redelivery started ${redelivery.started}`,
          );
        notes.set('preview', JSON.stringify(previewed));
        notes.set(
          'redelivery',
          `${redelivery.started.toLocaleString('en')} started (as its preview said) in ${(redelivery.wallMs / 1000).toFixed(1)} s, ${redelivery.statements.toLocaleString('en')} statements`,
        );
        if (rig.n * (PAYLOAD_DAYS / LOG_DAYS) >= MANY_MATCHES * 1.05) {
          notes.set('many preview', `${(await medianOf(3, () => previewOf(rig, MANY_MATCHES))).toFixed(1)} ms`);
          notes.set('many candidates', JSON.stringify(await timeCandidatePages(rig.knex, window(rig.n, MANY_MATCHES))));
        }
      }
      for (const [r, rig] of rigs.entries()) {
        progress(`year ${rig.n}: ingestion at 30/s`);
        const answers = quantiles((await ingest(rig.api.url, `year-ingest-${rig.n}`, 600, { perSecond: 30 })).answerMs);
        runs[r].ms.set('ingestion at 30/s: p50', answers.p50);
        runs[r].ms.set('ingestion at 30/s: p99', answers.p99);
      }
      progress(`year ${largest.n}: migration 023's indexes built again`);
      runs[runs.length - 1].notes.set('index builds', JSON.stringify(await timeIndexBuilds(largest.knex)));
      return report(runs);
    }),
};

/** One size: its database, seeded, with the API in this process (on a gateway of its own) and its settings. */
interface SizeRig {
  readonly n: number;
  readonly seed: SeedFigures;
  readonly knex: Knex;
  readonly env: NodeJS.ProcessEnv;
  readonly config: Config;
  readonly api: { url: string };
  readonly logger: ReturnType<typeof createLogger>;
}

async function prepareSize(
  serverUrl: string,
  n: number,
  temporalAddress: string,
  partner: PartnerServer,
  cleanups: Cleanups,
  progress: (m: string) => void,
): Promise<SizeRig> {
  const name = `bench_year_${n}`;
  await dropDatabase(serverUrl, name);
  const databaseUrl = await ensureDatabase(serverUrl, name);
  const knex = createKnex(databaseUrl, { min: 1, max: 10 });
  cleanups.push(() => knex.destroy().then(() => dropDatabase(serverUrl, name)));
  await migrateLatest(knex);
  await registerDevelopmentIndexKey(knex);
  const queue = `bench-year-${n}-${Date.now().toString(36)}`;
  const env = {
    ...serviceEnv(databaseUrl, partner.url),
    TEMPORAL_ADDRESS: temporalAddress,
    TEMPORAL_TASK_QUEUE: queue,
    PAYLOAD_ENCRYPTION_KEYS: KEY,
    // The partner app's reads here are timed one at a time, not rationed.
    PARTNER_API_REQUESTS_PER_MINUTE: '1000000',
  };
  const config = loadConfig(env);
  const seed = await seedYear(knex, n, dataAtRest(config), progress);
  await grantPartnerApp(knex);
  progress(`year ${n}: seeded in ${seed.seconds.toFixed(0)} s (${(seed.bytes / 1e9).toFixed(2)} GB)`);
  const logger = createLogger('error');
  const gateway = createTemporalGateway(config, logger);
  cleanups.push(() => gateway.close());
  const api = await startApiServer({ config, knex, logger, temporalGateway: gateway }, 0, '127.0.0.1');
  cleanups.push(() => api.close());
  return { n, seed, knex, env, config, api, logger };
}

const elapsed = async (work: () => Promise<unknown>) =>
  ((started) => work().then(() => performance.now() - started))(performance.now());

/** Every single filter of the delivery log and every pair of them, with values that match rows. */
function deliveryLogFilters(iso: (daysAgo: number) => string): Array<[string, Record<string, string>]> {
  const singles: Array<[string, Record<string, string>]> = [
    ['status=failed', { status: 'failed' }],
    ['event_type=company', { event_type: 'company' }],
    ['action=signup', { action: 'signup' }],
    ['company_id', { company_id: 'company-7' }],
    ['since (7 days)', { since: iso(7) }],
    ['until (60 days ago)', { until: iso(60) }],
  ];
  const pairs = singles.flatMap(([a, qa], i) =>
    singles.slice(i + 1).map(([b, qb]) => [`${a} & ${b}`, { ...qa, ...qb }] as [string, Record<string, string>]),
  );
  // A pair of since and until: the 15 days from 45 to 30 days ago.
  const window = pairs.findIndex(([label]) => label === 'since (7 days) & until (60 days ago)');
  pairs[window] = ['since & until (15 days)', { since: iso(45), until: iso(30) }];
  return [
    ...singles,
    ['status=waiting', { status: 'waiting' }],
    ['status=held', { status: 'held' }],
    ['deep page (cursor 40 pages in)', { cursorDepth: '40' }],
    ...pairs,
  ];
}

function auditFilters(iso: (daysAgo: number) => string): Array<[string, Record<string, string>]> {
  return [
    ['none', {}],
    ['rare action', { action: 'partner.pause' }],
    ['common action', { action: 'webhook.retry_now' }],
    ['actor', { actor: 'operator-3' }],
    ['since (7 days)', { since: iso(7) }],
    ['actor & rare action & since', { actor: 'operator-0', action: 'partner.pause', since: iso(60) }],
  ];
}

async function call(
  base: string,
  method: 'GET' | 'POST',
  path: string,
  body?: object,
): Promise<{ ms: number; text: string }> {
  let target = path;
  const depth = /[?&]cursorDepth=(\d+)/.exec(path);
  if (depth) target = await cursorAt(base, Number(depth[1]));
  const started = performance.now();
  const res = await request(`${base}${target}`, {
    method,
    headers: { authorization: `Bearer ${INTERNAL_API_TOKEN}`, ...(body && { 'content-type': 'application/json' }) },
    ...(body && { body: JSON.stringify(body) }),
  });
  const text = await res.body.text();
  const ms = performance.now() - started;
  if (res.statusCode !== 200) throw new Error(`${method} ${target} answered ${res.statusCode}: ${text.slice(0, 300)}`);
  return { ms, text };
}

/** The delivery log's page `pages` deep, by following next links (cached: the same link each time). */
const cursors = new Map<string, string>();
async function cursorAt(base: string, pages: number): Promise<string> {
  const cached = cursors.get(`${base}#${pages}`);
  if (cached) return cached;
  let path = `/internal/v1/webhooks?limit=${PAGE}`;
  for (let k = 0; k < pages; k++) {
    const res = await request(`${base}${path}`, { headers: { authorization: `Bearer ${INTERNAL_API_TOKEN}` } });
    const next = ((await res.body.json()) as { next: string | null }).next;
    if (!next) break;
    path = new URL(next).pathname + new URL(next).search;
  }
  cursors.set(`${base}#${pages}`, path);
  return path;
}

/** The median time of `count` runs of `work` after two unmeasured ones (a result's own `ms` when it has one). */
async function medianOf(count: number, work: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let k = 0; k < count + 2; k++) {
    const started = performance.now();
    const result = (await work()) as { ms?: number } | undefined;
    if (k >= 2) times.push(typeof result?.ms === 'number' ? result.ms : performance.now() - started);
  }
  return median(times);
}

/** Spawns a worker and waits for its "webhook worker polling" line: the worker, and the time from spawn. */
async function pollingWorker(
  env: NodeJS.ProcessEnv,
  cleanups: Cleanups,
): Promise<{ worker: ServiceProcess; ms: number }> {
  const started = performance.now();
  let polling!: () => void;
  const seen = new Promise<void>((resolve) => (polling = resolve));
  const worker = spawnService(
    'worker',
    { ...env, LOG_LEVEL: 'info', WORKER_HTTP_PORT: String(await findFreePort()) },
    [],
    undefined,
    (line) => {
      if (line.includes('webhook worker polling')) polling();
    },
  );
  cleanups.push(() => worker.stop());
  await Promise.race([
    seen,
    new Promise((_, reject) => setTimeout(() => reject(new Error('the worker did not poll within 60 s')), 60_000)),
  ]);
  return { worker, ms: performance.now() - started };
}

/** A worker's start until it polls; then it stops. */
async function workerStart(env: NodeJS.ProcessEnv, cleanups: Cleanups): Promise<number> {
  const { worker, ms } = await pollingWorker(env, cleanups);
  await worker.stop();
  return ms;
}

/** An erasure of a seeded candidate: its 202, and the time until its status says completed. */
async function timeErasure(base: string, candidateId: string): Promise<{ accepted: number; completed: number }> {
  const started = performance.now();
  const res = await request(`${base}/internal/v1/erasures`, {
    method: 'POST',
    headers: { authorization: `Bearer ${INTERNAL_API_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ candidate_id: candidateId }),
  });
  const body = (await res.body.json()) as { erasure_id: string };
  if (res.statusCode !== 202)
    throw new Error(`POST /internal/v1/erasures answered ${res.statusCode}: ${JSON.stringify(body)}`);
  const accepted = performance.now() - started;
  for (;;) {
    const status = (await (
      await request(`${base}/internal/v1/erasures/${body.erasure_id}`, {
        headers: { authorization: `Bearer ${INTERNAL_API_TOKEN}` },
      })
    ).body.json()) as { status: string };
    if (status.status === 'completed') return { accepted, completed: performance.now() - started };
    if (performance.now() - started > 120_000) throw new Error(`erasure ${body.erasure_id} not completed within 120 s`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * A real bulk redelivery of the window (the API's own function, its starts on a queue no worker polls, so the
 * partner is not flooded): how many it started, its wall time and its statements.
 */
async function timeRedelivery(
  { knex, config, logger }: SizeRig,
  window: { since: string; until: string },
  cleanups: Cleanups,
) {
  const idle = createTemporalGateway({ ...config, TEMPORAL_TASK_QUEUE: `${config.TEMPORAL_TASK_QUEUE}-idle` }, logger);
  cleanups.push(() => idle.close());
  const filter = { since: new Date(window.since), until: new Date(window.until) };
  const options = {
    sendTimeoutMs: config.PARTNER_TIMEOUT_MS,
    atRest: dataAtRest(config),
    limit: API_LIMIT,
    allowExpiredLinks: true,
  };
  let statements = 0;
  const count = () => statements++;
  knex.on('query', count);
  const started = performance.now();
  try {
    const result = await redeliverMatching(knex, idle, { actor: 'bench' }, filter, options);
    return { started: result.started, wallMs: performance.now() - started, statements };
  } finally {
    knex.off('query', count);
  }
}

/**
 * The candidate queries of a bulk redelivery of the window, every batch of 100 to the end, starting nothing (the
 * statements the redelivery sends: its starts do not change which rows a batch reads), then PostgreSQL's own
 * time for each, planning and execution, from EXPLAIN ANALYZE of the same statement.
 */
async function timeCandidatePages(knex: Knex, window: { since: string; until: string }) {
  const filter = { since: new Date(window.since), until: new Date(window.until) };
  const key = bulkRedeliveryKey(filter);
  const captured: Statement[] = [];
  const record = (query: Statement) => captured.push({ sql: query.sql, bindings: query.bindings ?? [] });
  let [rows, after] = [0, undefined as LogPosition | undefined];
  knex.on('query', record);
  try {
    for (;;) {
      const batch = await findRedeliveryCandidates(knex, filter, key, { limit: 100, after });
      if (!batch.last) break;
      [rows, after] = [rows + batch.candidates.length, batch.last];
    }
  } finally {
    knex.off('query', record);
  }
  let pgMs = 0;
  for (const statement of captured) {
    const [
      {
        'QUERY PLAN': [plan],
      },
    ] = await runSql<{ 'QUERY PLAN': Array<{ 'Planning Time': number; 'Execution Time': number }> }>(knex, {
      ...statement,
      sql: `EXPLAIN (ANALYZE, FORMAT JSON) ${statement.sql}`,
    });
    pgMs += plan['Planning Time'] + plan['Execution Time'];
  }
  return { rows, batches: captured.length, pgMs };
}

/** Each index of migration 023 dropped and built again CONCURRENTLY, with the seeded rows in place: seconds each. */
async function timeIndexBuilds(knex: Knex): Promise<Record<string, number>> {
  const [{ definitions }] = await runSql<{ definitions: Record<string, string> }>(
    knex,
    raw(
      `SELECT json_object_agg(indexname, indexdef) AS definitions FROM pg_indexes WHERE indexname IN (${INDEXES_023.map((i) => `'${i}'`).join(', ')})`,
    ),
  );
  const seconds: Record<string, number> = {};
  for (const index of INDEXES_023) {
    await knex.raw(`DROP INDEX CONCURRENTLY ${index}`);
    const started = performance.now();
    await knex.raw(definitions[index].replace('CREATE INDEX', 'CREATE INDEX CONCURRENTLY'));
    seconds[index] = Number(((performance.now() - started) / 1000).toFixed(1));
  }
  return seconds;
}

async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  const admin = createKnex(serverUrl, { min: 0, max: 1 });
  await runSql(admin, raw(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`)).finally(() =>
    admin.destroy(),
  );
}

function report(runs: readonly SizeRun[]): string {
  const [first, last] = [runs[0], runs[runs.length - 1]];
  const size = (n: number) => (n >= 1e6 ? `${n / 1e6} M` : `${n / 1e3} k`);
  const ms = (value: number | undefined) =>
    value === undefined ? '' : value >= 100 ? `${value.toFixed(0)} ms` : `${value.toFixed(2)} ms`;
  const informative = (op: string) => op.includes('key no longer listed') || op.includes('wall time');
  const rows = [...first.ms.keys()].map((op) => {
    const growth = last.ms.get(op)! / first.ms.get(op)!;
    return [
      op,
      ...runs.map((run) => ms(run.ms.get(op))),
      `${growth.toFixed(2)} ×`,
      informative(op) ? '(not a goal)' : verdict(growth <= GOAL),
    ];
  });
  const goals = [...first.ms.keys()].filter((op) => !informative(op));
  const met = goals.filter((op) => last.ms.get(op)! / first.ms.get(op)! <= GOAL).length;
  const many = last.notes.get('many candidates');
  const manyFigures = many ? (JSON.parse(many) as { rows: number; batches: number; pgMs: number }) : undefined;
  const builds = last.notes.get('index builds');
  return [
    `Seeded per size with bench/year/seed.ts (generate_series for the rows past the ${PAYLOAD_DAYS}-day payload retention, INSERT … unnest ` +
      `for the newer ones, each body and excerpt sealed by the service's own sealing, each candidate webhook with its subject keys): ` +
      `90 % delivered at the first try, 8 % after 2 to 4 attempts, 2 % failed; over ${LOG_DAYS} days. Each operation is the median of ` +
      `${REPEATS} requests through the API in the benchmark's process (after 2 unmeasured), or as its row says.`,
    '',
    table(
      ['size', '>webhooks', '>attempts', '>sealed bodies', '>audit rows', '>database', '>seeded in'],
      runs.map((run) => [
        size(run.n),
        run.seed.webhooks.toLocaleString('en'),
        run.seed.attempts.toLocaleString('en'),
        run.seed.sealedBodies.toLocaleString('en'),
        run.seed.auditRows.toLocaleString('en'),
        `${(run.seed.bytes / 1e9).toFixed(2)} GB`,
        `${run.seed.seconds.toFixed(0)} s`,
      ]),
    ),
    '',
    `**${met} of ${goals.length} operations grow by at most ${GOAL} × from ${size(first.n)} to ${size(last.n)}: ${verdict(met === goals.length)}.**`,
    '',
    table(['operation', ...runs.map((run) => `>${size(run.n)}`), '>growth', 'goal'], rows),
    '',
    manyFigures
      ? `**A bulk redelivery of ${manyFigures.rows.toLocaleString('en')} rows at ${size(last.n)}:** its ${manyFigures.batches.toLocaleString('en')} candidate queries spent ` +
        `${Math.round(manyFigures.pgMs).toLocaleString('en')} ms in PostgreSQL in all (EXPLAIN ANALYZE of each: planning and execution) (goal ≤ ${MANY_GOAL_MS.toLocaleString('en')} ms: ${verdict(manyFigures.pgMs <= MANY_GOAL_MS)}); its preview took ${last.notes.get('many preview')}.`
      : '',
    '',
    `Bulk redelivery of ${MATCHES.toLocaleString('en')} rows, per size: ${runs.map((run) => `${size(run.n)}: ${run.notes.get('redelivery')}`).join('; ')}. ` +
      `The preview's answer at ${size(last.n)}: \`${last.notes.get('preview')}\`.`,
    '',
    builds
      ? `Migration 023's indexes, each built again with CREATE INDEX CONCURRENTLY at ${size(last.n)} (seconds): ${Object.entries(
          JSON.parse(builds) as Record<string, number>,
        )
          .map(([index, s]) => `\`${index}\` ${s}`)
          .join(', ')}.`
      : '',
    '',
    last.notes.has('partner plans')
      ? `The partner list's statements on webhook_events at ${size(last.n)} (EXPLAIN ANALYZE):\n\n${last.notes.get('partner plans')}`
      : '',
  ].join('\n');
}
