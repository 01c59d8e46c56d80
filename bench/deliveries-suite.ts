import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import type { Knex } from 'knex';
import { request } from 'undici';
import candidateNew from '../test/fixtures/events/candidate-new.json';
import { webhookHeaders } from '../events/delivery-headers';
import { findFreePort } from '../db/embedded-postgres';
import { envelopeBody, type WebhookEventInput } from '../events/envelope';
import { findTemporalBinary } from '../temporal/binaries';
import { LOCAL_SQLITE_PRAGMAS } from '../temporal/local-temporal';
import { RETRY_DELAYS_MS } from '../workflows/types';
import { topSelfTime } from './cpu-profile';
import { reportDeliveries, type PartFigures, type ProcessRole } from './deliveries-report';
import { countActions, isolatedDeliveryHistories, type DeliveryHistory } from './history-actions';
import { inParallel } from '../lib/in-parallel';
import { startPartnerServer, type PartnerServer } from './partner-server';
import { cpuSeconds, machineBusySeconds, postmasterPid, sampleRss, treeCpuSeconds } from './proc-stats';
import { quantiles } from './quantiles';
import { spawnService, type ServiceProcess } from './service-process';
import type { BenchmarkSuite } from './suite';
import { startBenchTemporal } from './temporal-server';

const WEBHOOKS = 2_000;
const RETRIED_WEBHOOKS = 5_000;
const CONCURRENCY = 32;
const WARMUP_WEBHOOKS = 20;
/** Part 2 should end within about 5 minutes, as Part 1 runs twice; a retried webhook costs about two deliveries. */
const RETRY_BUDGET_SECONDS = 5 * 60;
/** Part 3: an open-loop rate at half the goal, for latency below capacity, long enough for a stable p99. */
const STEADY_PER_SECOND = 50;
const STEADY_SECONDS = 60;
/** Workers in the second run of Part 1. */
const SCALED_WORKERS = 2;
const TOP_FRAMES = 15;
/** The sampling profiler costs the worker a few percent of a core it does not use up: on unless BENCH_CPU_PROF=0. */
const CPU_PROFILE = process.env.BENCH_CPU_PROF !== '0';
const FIRST_RETRY_SECONDS = RETRY_DELAYS_MS[0] / 1000;
const INTERNAL_API_TOKEN = 'bench-internal-api-token-0123456789';
const PARTNER_ACCESS_TOKEN = 'bench-partner-access-token';
const EVENT = candidateNew as WebhookEventInput;

/** A process whose CPU (and, with a pid, peak RSS) each part measures. */
interface MeasuredProcess {
  readonly label: string;
  readonly role: ProcessRole;
  readonly pid?: number;
  /** NaN when it cannot be measured here. */
  cpuSeconds(): number;
}

/** Everything one part measures against. */
interface Rig {
  readonly apiUrl: string;
  readonly partner: PartnerServer;
  readonly knex: Knex;
  readonly services: readonly ServiceProcess[];
  readonly processes: readonly MeasuredProcess[];
  progress(message: string): void;
}

/**
 * Webhook delivery end to end: a real `temporal server start-dev`, the service's `api` and `worker` as
 * separate processes, and a partner server in this process that records when each webhook arrives.
 */
export const deliveriesSuite: BenchmarkSuite = {
  name: 'deliveries',
  async run({ databaseUrl, knex, progress }) {
    const executable = findTemporalBinary('temporal');
    if (!executable) throw new Error('no `temporal` executable: run scripts/install-temporal.sh or put it on PATH');
    const cleanups: Array<() => Promise<unknown>> = [];
    try {
      const partner = await startPartnerServer();
      cleanups.push(() => partner.close());
      progress(`deliveries: baseline, ${WEBHOOKS} POSTs straight to the partner`);
      await baseline(partner); // warms up the loop and the partner server
      const baselineRate = await baseline(partner);

      // First, as it fails fast: its own dev server, stopped before anything is measured.
      progress('deliveries: histories of a first-try and an always-refused delivery, timers ÷1000, on a dev server of their own');
      const isolated = await isolatedDeliveryHistories({ executable, knex, partner, partnerAccessToken: PARTNER_ACCESS_TOKEN, event: EVENT });

      const temporal = await startBenchTemporal(executable);
      cleanups.push(() => temporal.stop());
      const { server } = temporal;
      const env = {
        DATABASE_URL: databaseUrl,
        TEMPORAL_ADDRESS: server.address,
        TEMPORAL_TASK_QUEUE: `bench-deliveries-${randomUUID()}`,
        INTERNAL_API_TOKEN,
        PARTNER_ENDPOINT: `${partner.url}/webhooks`,
        PARTNER_ACCESS_TOKEN,
        // Out of the way: the benchmark measures the service, not the partner limits.
        PARTNER_MAX_CONCURRENCY: '200',
        PARTNER_MAX_PER_SECOND: '100000',
        LOG_LEVEL: 'warn',
      };
      const spawnWorker = (nodeArgs: readonly string[] = []) => {
        const worker = spawnService('worker', env, nodeArgs);
        cleanups.push(() => worker.stop());
        return worker;
      };
      const profileDir = CPU_PROFILE ? await mkdtemp(path.join(os.tmpdir(), 'pis-bench-cpuprof-')) : undefined;
      if (profileDir) cleanups.push(() => rm(profileDir, { recursive: true, force: true }));
      const profiled = spawnWorker(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []);
      const port = await findFreePort();
      const api = spawnService('api', { ...env, HOST: '127.0.0.1', PORT: String(port) });
      cleanups.push(() => api.stop());
      const postmaster = await postmasterPid(knex);
      const rigWith = (workers: readonly ServiceProcess[]): Rig => ({
        apiUrl: `http://127.0.0.1:${port}`,
        partner,
        knex,
        services: [api, ...workers],
        processes: [
          pidProcess('Temporal dev server', 'temporal', server.process.pid!),
          pidProcess('API (`partner-service api`)', 'api', api.pid),
          ...workers.map((w, i) => pidProcess(`worker${workers.length > 1 ? ` ${i + 1}` : ''} (\`partner-service worker\`)`, 'worker', w.pid)),
          {
            label: 'PostgreSQL (postmaster and backends)',
            role: 'postgres',
            cpuSeconds: () => (postmaster === undefined ? NaN : treeCpuSeconds(postmaster)),
          },
          { label: 'bench process (load, partner server, polling)', role: 'bench', cpuSeconds: ownCpuSeconds },
        ],
        progress,
      });
      let rig = rigWith([profiled]);
      await waitUntil(rig, 'the API to answer /healthz', 30_000, async () => {
        const res = await request(`${rig.apiUrl}/healthz`).catch(() => undefined);
        await res?.body.dump();
        return res?.statusCode === 200;
      });

      const tag = Date.now().toString(36);
      // Also waits for the workers to poll.
      const warmUp = (r: Rig, name: string) => {
        progress(`deliveries: warm-up, ${WARMUP_WEBHOOKS} webhooks (${name})`);
        return runPart(r, { prefix: `warm-${name}-${tag}`, count: WARMUP_WEBHOOKS, failFirst: false });
      };
      await warmUp(rig, '1-worker');
      progress(`deliveries: part 1, ${WEBHOOKS} webhooks, 1 worker process${profileDir ? ' under --cpu-prof' : ''}`);
      const part1 = await runPart(rig, { prefix: `p1-${tag}`, count: WEBHOOKS, failFirst: false });
      const firstTry = await deliveredHistory(rig, server.address, `p1-${tag}`);
      // The profile is written when the worker exits, and covers its whole life: start, warm-up and Part 1.
      await profiled.stop();
      const profile = profileDir ? await topSelfTime(profileDir, TOP_FRAMES) : undefined;

      const scaled = Array.from({ length: SCALED_WORKERS }, () => spawnWorker());
      rig = rigWith(scaled);
      await warmUp(rig, `${SCALED_WORKERS}-workers`);
      progress(`deliveries: part 1 again, ${WEBHOOKS} webhooks, ${SCALED_WORKERS} worker processes`);
      const part1Scaled = await runPart(rig, { prefix: `p1s-${tag}`, count: WEBHOOKS, failFirst: false });
      // Parts 2 and 3 with one worker process, as before.
      for (const worker of scaled.slice(1)) await worker.stop();
      rig = rigWith(scaled.slice(0, 1));

      const steadyCount = STEADY_PER_SECOND * STEADY_SECONDS;
      progress(`deliveries: part 3, ${steadyCount} webhooks sent at ${STEADY_PER_SECOND}/s`);
      const part3 = await runPart(rig, { prefix: `p3-${tag}`, count: steadyCount, failFirst: false, perSecond: STEADY_PER_SECOND });

      const fit = Math.floor(((RETRY_BUDGET_SECONDS - FIRST_RETRY_SECONDS) * part1.deliveriesPerSecond) / 2);
      const retried = Math.max(1, Math.min(RETRIED_WEBHOOKS, fit));
      progress(`deliveries: part 2, ${retried} webhooks whose first attempt fails (${part1.deliveriesPerSecond.toFixed(1)}/s in part 1)`);
      const part2 = await runPart(rig, { prefix: `p2-${tag}`, count: retried, failFirst: true });

      return reportDeliveries({
        // "temporal version 1.9.1 (Server 1.32.0, UI 2.54.1)" → "CLI 1.9.1, Server 1.32.0, UI 2.54.1"
        temporalVersion: execFileSync(executable, ['--version']).toString().trim().replace(/^temporal version (\S+) \((.*)\)$/, 'CLI $1, $2'),
        sqlitePragmas: LOCAL_SQLITE_PRAGMAS,
        bodyBytes: Buffer.byteLength(envelopeBody(EVENT)),
        concurrency: CONCURRENCY,
        requestedRetried: RETRIED_WEBHOOKS,
        retryBudgetSeconds: RETRY_BUDGET_SECONDS,
        steadyPerSecond: STEADY_PER_SECOND,
        baselineRate,
        part1,
        part1Scaled,
        scaledWorkers: SCALED_WORKERS,
        part2,
        part3,
        histories: [
          { label: 'a Part 1 webhook', ...firstTry },
          { label: 'first try (isolated, timers ÷1000)', ...isolated.firstTry },
          { label: 'partner always answers 500 (isolated, timers ÷1000)', ...isolated.failing },
        ],
        profile,
      });
    } finally {
      // Reverse order: the service before Temporal, Temporal before its directory.
      for (const cleanup of cleanups.reverse()) await cleanup().catch((error: unknown) => progress(`deliveries: cleanup failed: ${String(error)}`));
    }
  },
};

const pidProcess = (label: string, role: ProcessRole, pid: number): MeasuredProcess => ({ label, role, pid, cpuSeconds: () => cpuSeconds(pid) });

function ownCpuSeconds(): number {
  const own = process.cpuUsage();
  return (own.user + own.system) / 1e6;
}

/** The history of one delivered webhook of the part just run (whose receipts the partner still holds). */
async function deliveredHistory(rig: Rig, address: string, prefix: string): Promise<DeliveryHistory> {
  const row = await rig.knex('webhook_events').whereRaw('starts_with(event_id, ?)', [`${prefix}-`]).where({ status: 'delivered' }).first('id', 'workflow_id', 'status');
  if (!row?.workflow_id) throw new Error(`no delivered webhook of ${prefix} to read the history of`);
  const connection = await Connection.connect({ address });
  try {
    const history = await new Client({ connection }).workflow.getHandle(row.workflow_id).fetchHistory();
    return { posts: rig.partner.receipts.get(row.id)?.length ?? 0, status: row.status, counts: countActions(history) };
  } finally {
    await connection.close();
  }
}

/** The same POSTs the service makes (envelope and headers), from a plain loop straight to the partner. */
async function baseline(partner: PartnerServer): Promise<number> {
  partner.reset({ failFirst: false });
  const body = envelopeBody(EVENT);
  const started = performance.now();
  await inParallel(WEBHOOKS, CONCURRENCY, async () => {
    const res = await request(`${partner.url}/webhooks`, {
      method: 'POST',
      headers: webhookHeaders(PARTNER_ACCESS_TOKEN, randomUUID(), Date.now()),
      body,
    });
    await res.body.dump();
    if (res.statusCode !== 204) throw new Error(`the partner answered ${res.statusCode} to the baseline`);
  });
  return WEBHOOKS / ((performance.now() - started) / 1000);
}

/**
 * Posts `count` webhooks to the API, `concurrency` at a time or, with `perSecond`, on an open-loop schedule;
 * waits until the partner got them all and every row is delivered, and measures.
 */
async function runPart(rig: Rig, { prefix, count, failFirst, perSecond }: { prefix: string; count: number; failFirst: boolean; perSecond?: number }): Promise<PartFigures> {
  const { partner, knex } = rig;
  partner.reset({ failFirst });
  const expected = failFirst ? 2 : 1;
  const rss = sampleRss(rig.processes.flatMap((p) => (p.pid === undefined ? [] : [p.pid])));
  const cpuBefore = rig.processes.map((p) => p.cpuSeconds());
  const machineBefore = machineBusySeconds();
  const started = performance.now();
  try {
    const { accepted, refused, answerMs } = await ingest(rig.apiUrl, prefix, count, perSecond);
    const ingested = performance.now();
    rig.progress(`deliveries: ${accepted.size} accepted in ${((ingested - started) / 1000).toFixed(1)} s; waiting for delivery`);

    const ids = [...accepted.keys()];
    const received = () => ids.filter((id) => (partner.receipts.get(id)?.length ?? 0) >= expected).length;
    const rows = () => rowCounts(knex, prefix);
    // Generous: two POSTs a second (a fiftieth of the goal) plus two minutes, which covers the retry timer.
    const timeoutMs = 120_000 + count * expected * 500;
    let lastReport = performance.now();
    const completed = await waitUntil(rig, `delivery of ${prefix}`, timeoutMs, async () => {
      const done = received();
      if (done < ids.length) {
        if (performance.now() - lastReport > 15_000) {
          lastReport = performance.now();
          rig.progress(`deliveries: ${done}/${ids.length} received as expected`);
        }
        return false;
      }
      return (await rows()).delivered === ids.length;
    });
    const finished = performance.now();
    const cpuAfter = rig.processes.map((p) => p.cpuSeconds());
    const machineCpu = machineBusySeconds() - machineBefore;

    const acceptedTimes = [...accepted.values()];
    const firstAccepted = Math.min(...acceptedTimes);
    const lastReceipt = Math.max(...ids.map((id) => partner.receipts.get(id)?.[expected - 1] ?? -Infinity));
    const counts = ids.map((id) => partner.receipts.get(id)?.length ?? 0);
    const latencies = ids.filter((id) => partner.receipts.has(id)).map((id) => partner.receipts.get(id)![0] - accepted.get(id)!);
    const { delivered, total } = await rows();
    const attempts = await attemptOutcomes(knex, prefix);
    const expectedAttempt = (a: AttemptOutcome) =>
      failFirst ? (a.attempt === 1 && a.http_status === 500) || (a.attempt === 2 && a.succeeded) : a.attempt === 1 && a.succeeded;
    return {
      count,
      accepted: accepted.size,
      refused,
      timedOut: !completed,
      timeoutSeconds: timeoutMs / 1000,
      ingestSeconds: (Math.max(...acceptedTimes) - started) / 1000,
      endToEndSeconds: (lastReceipt - firstAccepted) / 1000,
      totalSeconds: (lastReceipt - started) / 1000,
      untilDeliveredSeconds: (finished - started) / 1000,
      deliveriesPerSecond: ids.length / ((lastReceipt - firstAccepted) / 1000),
      latencyMs: quantiles(latencies),
      answerMs: quantiles(answerMs),
      missing: counts.filter((n) => n < expected).length,
      surplus: counts.filter((n) => n > expected).length,
      strays: [...partner.receipts.keys()].filter((id) => !accepted.has(id)).length,
      expectedReceipts: expected,
      deliveredRows: delivered,
      rows: total,
      deliveredOnSecondAttempt: sum(attempts.filter((a) => a.attempt === 2 && a.succeeded)),
      laterAttempts: sum(attempts.filter((a) => a.attempt > 2)),
      unexpectedAttempts: attempts.filter((a) => !expectedAttempt(a)).map((a) =>
        `attempt ${a.attempt}, ${a.succeeded ? 'succeeded' : 'failed'}: ${a.http_status ?? a.error_class}${a.error ? ` (${a.error})` : ''}, ${a.count} ×`),
      peakWaiting: failFirst ? peakWaiting(ids.map((id) => partner.receipts.get(id) ?? [])) : 0,
      processes: rig.processes.map((p, i) => ({
        label: p.label,
        role: p.role,
        cpu: cpuAfter[i] - cpuBefore[i],
        peakRss: p.pid === undefined ? undefined : rss.peak(p.pid),
      })),
      machineCpu,
    };
  } finally {
    rss.stop();
  }
}

/**
 * POSTs the webhooks to the internal API: the time of each 202 by the webhook_id in its body, and how long
 * each answer took. With `perSecond`, webhook i is sent at start + i / perSecond whatever the answers (an open
 * loop: a slow API cannot slow the load down), and an answer counts from when its POST was due.
 */
async function ingest(apiUrl: string, prefix: string, count: number, perSecond?: number) {
  const accepted = new Map<string, number>();
  const refused = new Map<string, number>();
  const answerMs: number[] = [];
  const post = async (i: number, due = performance.now()) => {
    try {
      const res = await request(`${apiUrl}/internal/v1/webhooks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${INTERNAL_API_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ ...EVENT, event_id: `${prefix}-${i}` }),
      });
      const at = performance.now();
      answerMs.push(at - due);
      const body = (await res.body.json()) as { webhook_id?: string };
      if (res.statusCode === 202 && body.webhook_id) accepted.set(body.webhook_id, at);
      else refused.set(String(res.statusCode), (refused.get(String(res.statusCode)) ?? 0) + 1);
    } catch (error) {
      const name = error instanceof Error ? error.name : 'error';
      refused.set(name, (refused.get(name) ?? 0) + 1);
    }
  };
  if (perSecond === undefined) await inParallel(count, CONCURRENCY, (i) => post(i));
  else {
    const start = performance.now();
    const sent: Promise<void>[] = [];
    for (let i = 0; i < count; i++) {
      const due = start + (i * 1000) / perSecond;
      if (due > performance.now()) await delay(due - performance.now());
      sent.push(post(i, due));
    }
    await Promise.all(sent);
  }
  return { accepted, refused, answerMs };
}

async function rowCounts(knex: Knex, prefix: string): Promise<{ delivered: number; total: number }> {
  const [row] = await knex('webhook_events')
    .whereRaw('starts_with(event_id, ?)', [`${prefix}-`])
    .select(knex.raw("count(*) filter (where status = 'delivered')::int as delivered"), knex.raw('count(*)::int as total'));
  return row;
}

interface AttemptOutcome {
  readonly attempt: number;
  readonly succeeded: boolean;
  readonly http_status: number | null;
  readonly error_class: string | null;
  readonly error: string | null;
  readonly count: number;
}

/** The recorded attempts of a part, grouped by number and outcome. */
async function attemptOutcomes(knex: Knex, prefix: string): Promise<AttemptOutcome[]> {
  return knex('webhook_attempts as a')
    .join('webhook_events as e', 'e.id', 'a.webhook_id')
    .whereRaw('starts_with(e.event_id, ?)', [`${prefix}-`])
    .select('a.attempt', 'a.succeeded', 'a.http_status', 'a.error_class', knex.raw('left(a.error_message, 160) as error'), knex.raw('count(*)::int as count'))
    .groupBy(1, 2, 3, 4, 5)
    .orderBy([1, 2, 3, 4, 5]);
}

const sum = (outcomes: AttemptOutcome[]) => outcomes.reduce((total, outcome) => total + outcome.count, 0);

/** Polls `check` until it holds (true) or the time is up (false); fails at once when a service died. */
async function waitUntil(rig: Rig, what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    for (const service of rig.services) service.assertRunning();
    if (await check()) return true;
    if (performance.now() > deadline) {
      rig.progress(`deliveries: gave up waiting for ${what} after ${timeoutMs / 1000} s`);
      return false;
    }
    await delay(250);
  }
}

/** The most webhooks that had been refused once and not yet re-sent, at any moment. */
function peakWaiting(receipts: number[][]): number {
  const changes = receipts.filter((r) => r.length >= 2).flatMap((r): Array<[number, number]> => [[r[0], 1], [r[1], -1]]);
  changes.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let waiting = 0;
  let peak = 0;
  for (const [, change] of changes) peak = Math.max(peak, (waiting += change));
  return peak;
}
