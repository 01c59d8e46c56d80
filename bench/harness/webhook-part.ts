import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import type { Knex } from 'knex';
import { request } from 'undici';
import candidateNew from '../../examples/events/candidate-new.json';
import type { WebhookEventInput } from '../../events/envelope';
import { inParallel } from '../../lib/in-parallel';
import { countActions, type DeliveryHistory } from './history';
import { startPartnerServer, type PartnerServer } from './partner';
import { findFreePort } from '../../lib/ports';
import { runSql, sql } from '../../db/sql';
import { cpuSeconds, machineBusySeconds, postgresCpuClock, sampleRss } from './proc';
import { quantiles } from './stats';
import { spawnService, type ServiceProcess } from './service';
import { benchTemporalBinary, startBenchTemporal } from './temporal';

/**
 * One measured part of the deliveries benchmark against a running service: POST webhooks to its internal
 * API, wait until the partner got each and every row is delivered, and measure rate, latency and CPU.
 */

export const CONCURRENCY = 32;
export const WARMUP_WEBHOOKS = 20;
export const INTERNAL_API_TOKEN = 'bench-internal-api-token-0123456789';
export const PARTNER_ACCESS_TOKEN = 'bench-partner-access-token';

/**
 * The service's configuration in every part: the bench database and partner, and the partner limits out of
 * the way (the benchmark measures the service, not them): the breaker at its highest, as Part 2's partner
 * refuses every first POST (at the default 10 it tripped again and again, and Part 2 stalled); warn, since
 * info logs a line per delivery.
 */
export const serviceEnv = (databaseUrl: string, partnerUrl: string) => ({
  DATABASE_URL: databaseUrl,
  INTERNAL_API_TOKEN,
  PARTNER_ENDPOINT: `${partnerUrl}/webhooks`,
  PARTNER_ACCESS_TOKEN,
  PARTNER_MAX_CONCURRENCY: '200',
  PARTNER_MAX_PER_SECOND: '100000',
  PARTNER_BREAKER_FAILURES: '10000',
  LOG_LEVEL: 'warn',
});
/** The example candidate/new event (examples/events/), with an event_id of its own. */
export const EVENT: WebhookEventInput = { ...candidateNew, event_id: 'bench-candidate-new' } as WebhookEventInput;

/**
 * Webhook `i` of a part: EVENT with the event_id `${prefix}-${i}` and the candidate `${prefix}-k${i % keys}`. The
 * candidate id is its ordering key (WEBHOOK_ORDERING=entity): by default each webhook is an entity of its own, so
 * ordering serialises nothing, as unordered load; `keys` puts them on that many keys.
 */
export function benchEvent(prefix: string, i: number, keys = Infinity): WebhookEventInput {
  const data = EVENT.data as typeof candidateNew.data;
  return {
    ...EVENT,
    event_id: `${prefix}-${i}`,
    data: { ...data, candidate: { ...data.candidate, id: `${prefix}-k${i % keys}` } },
  };
}

/** `start`: the single process of `partner-service start` (API and worker). */
export type ProcessRole = 'temporal' | 'api' | 'worker' | 'start' | 'postgres' | 'bench';

/** What one part measured: rates, latencies, the partner's and the database's view, and CPU per process. */
export type PartFigures = Awaited<ReturnType<typeof runPart>>;
export type Quantiles = ReturnType<typeof quantiles>;

/** A process whose CPU (and, with a pid, peak RSS) each part measures. */
export interface MeasuredProcess {
  readonly label: string;
  readonly role: ProcessRole;
  readonly pid?: number;
  /** NaN when it cannot be measured here. */
  cpuSeconds(): number;
}

/** Everything one part measures against. */
export interface Rig {
  readonly apiUrl: string;
  readonly partner: PartnerServer;
  readonly knex: Knex;
  readonly services: readonly ServiceProcess[];
  readonly processes: readonly MeasuredProcess[];
  progress(message: string): void;
}

/** A process measured from /proc by its pid. */
export const pidProcess = (label: string, role: ProcessRole, pid: number): MeasuredProcess => ({
  label,
  role,
  pid,
  cpuSeconds: () => cpuSeconds(pid),
});

/** CPU seconds of the bench process itself. */
export function ownCpuSeconds(): number {
  const own = process.cpuUsage();
  return (own.user + own.system) / 1e6;
}

/** What every part measures besides the service's processes: PostgreSQL (NaN when remote) and the bench process. */
export const sharedProcesses = (postgresCpuSeconds: () => number): MeasuredProcess[] => [
  { label: 'PostgreSQL (postmaster and backends)', role: 'postgres', cpuSeconds: postgresCpuSeconds },
  { label: 'bench process (load, partner server, polling)', role: 'bench', cpuSeconds: ownCpuSeconds },
];

/**
 * `partner-service api` and `worker`s (of the checkout at `root`, or this one) on a dev server of their own, with serviceEnv and `env`;
 * `cleanups` stops them. `rigWith` measures the API and the workers given, each from `spawnWorker`, all on one task queue;
 * `spawnApi` adds another API on it.
 */
export async function startServiceRig(o: {
  databaseUrl: string;
  knex: Knex;
  partner: PartnerServer;
  executable: string;
  cleanups: Array<() => Promise<unknown>>;
  progress(message: string): void;
  env?: NodeJS.ProcessEnv;
  root?: string;
  temporalOnTmpfs?: boolean;
}) {
  const temporal = await startBenchTemporal(o.executable, { tmpfs: o.temporalOnTmpfs });
  o.cleanups.push(() => temporal.stop());
  const { server } = temporal;
  const env = {
    ...serviceEnv(o.databaseUrl, o.partner.url),
    TEMPORAL_ADDRESS: server.address,
    TEMPORAL_TASK_QUEUE: `bench-${randomUUID()}`,
    ...o.env,
  };
  // Each worker serves /healthz and /metrics on a port of its own: two on the default 3001 collide.
  const spawnWorker = async () => {
    const worker = spawnService('worker', { ...env, WORKER_HTTP_PORT: String(await findFreePort()) }, [], o.root);
    o.cleanups.push(() => worker.stop());
    return worker;
  };
  /** An API process on a port of its own, with `extra` on top of the rig's settings. */
  const spawnApi = async (extra: NodeJS.ProcessEnv = {}) => {
    const apiPort = await findFreePort();
    const process = spawnService('api', { ...env, HOST: '127.0.0.1', PORT: String(apiPort), ...extra }, [], o.root);
    o.cleanups.push(() => process.stop());
    return { process, url: `http://127.0.0.1:${apiPort}` };
  };
  const { process: api, url: apiUrl } = await spawnApi();
  const postgres = await postgresCpuClock(o.knex);
  const rigWith = (workers: readonly ServiceProcess[]): Rig => ({
    apiUrl,
    partner: o.partner,
    knex: o.knex,
    services: [api, ...workers],
    progress: o.progress,
    processes: [
      pidProcess('Temporal dev server', 'temporal', server.process.pid!),
      pidProcess('API (`partner-service api`)', 'api', api.pid),
      ...workers.map((w, i) =>
        pidProcess(`worker${workers.length > 1 ? ` ${i + 1}` : ''} (\`partner-service worker\`)`, 'worker', w.pid),
      ),
      ...sharedProcesses(postgres),
    ],
  });
  return { server, env, spawnWorker, spawnApi, rigWith };
}

/**
 * `partner-service api` alone (no worker: only ingestion is measured) on a dev server, with a partner server of its
 * own and `env`, answering /healthz and warmed up by 100 webhooks: the rig of the ingestion suites.
 */
export async function startIngestionApi(o: {
  databaseUrl: string;
  knex: Knex;
  cleanups: Array<() => Promise<unknown>>;
  progress(message: string): void;
  env?: NodeJS.ProcessEnv;
}): Promise<Rig> {
  const partner = await startPartnerServer();
  o.cleanups.push(() => partner.close());
  const rig = (await startServiceRig({ ...o, partner, executable: benchTemporalBinary() })).rigWith([]);
  await waitForHealthz(rig, 'the API', rig.apiUrl, 60_000);
  await ingest(rig.apiUrl, 'warm-up', 100);
  return rig;
}

/** Waits until the API at `apiUrl` answers /healthz; throws when it does not in time or a service died. */
export async function waitForHealthz(
  waiting: Pick<Rig, 'services' | 'progress'>,
  what: string,
  apiUrl: string,
  timeoutMs: number,
): Promise<void> {
  const up = await waitUntil(waiting, `${what} to answer /healthz`, timeoutMs, async () => {
    const res = await request(`${apiUrl}/healthz`).catch(() => undefined);
    await res?.body.dump();
    return res?.statusCode === 200;
  });
  if (!up) throw new Error(`${what} did not answer /healthz within ${timeoutMs / 1000} s`);
}

/** The history of one delivered webhook of the part just run (whose receipts the partner still holds). */
export async function deliveredHistory(rig: Rig, address: string, prefix: string): Promise<DeliveryHistory> {
  const row = await rig
    .knex('webhook_events')
    .whereRaw('starts_with(event_id, ?)', [`${prefix}-`])
    .where({ status: 'delivered' })
    .first('id', 'workflow_id', 'status');
  if (!row?.workflow_id) throw new Error(`no delivered webhook of ${prefix} to read the history of`);
  const connection = await Connection.connect({ address });
  try {
    const history = await new Client({ connection }).workflow.getHandle(row.workflow_id).fetchHistory();
    return { posts: rig.partner.receipts.get(row.id)?.length ?? 0, status: row.status, counts: countActions(history) };
  } finally {
    await connection.close();
  }
}

/**
 * Posts `count` webhooks to the API (on `keys` ordering keys, by default one each), `concurrency` at a time or, with `perSecond`, on an open-loop schedule;
 * runs `afterIngest` (a hold and its end); waits until the partner (answering `latencyMs` late) got them all and every row is delivered, and measures.
 */
export async function runPart(
  rig: Rig,
  {
    prefix,
    count,
    failFirst,
    perSecond,
    stop,
    afterIngest,
    keys,
    latencyMs,
  }: {
    prefix: string;
    count: number;
    failFirst: boolean;
    perSecond?: number;
    stop?: AbortSignal;
    afterIngest?: (accepted: number) => Promise<void>;
    keys?: number;
    latencyMs?: number;
  },
) {
  const { partner, knex } = rig;
  partner.reset({ failFirst, latencyMs });
  const expected = failFirst ? 2 : 1;
  const rss = sampleRss(rig.processes.flatMap((p) => (p.pid === undefined ? [] : [p.pid])));
  const cpuBefore = rig.processes.map((p) => p.cpuSeconds());
  const machineBefore = machineBusySeconds();
  const started = performance.now();
  try {
    const { accepted, refused, answerMs, dueMs } = await ingest(rig.apiUrl, prefix, count, { perSecond, stop, keys });
    const ingested = performance.now();
    rig.progress(
      `deliveries: ${accepted.size} accepted in ${((ingested - started) / 1000).toFixed(1)} s; waiting for delivery`,
    );
    await afterIngest?.(accepted.size);
    const ids = [...accepted.keys()];
    const received = () => ids.filter((id) => (partner.receipts.get(id)?.length ?? 0) >= expected).length;
    const rows = () => rowCounts(knex, prefix);
    // Generous: two POSTs a second (a fiftieth of the goal) plus two minutes, which covers the retry timer.
    const timeoutMs = 120_000 + count * expected * 500;
    let lastReport = performance.now();
    const completed = await waitUntil(rig, `delivery of ${prefix}`, timeoutMs, async () => {
      const done = received();
      if (done < ids.length && performance.now() - lastReport > 15_000) {
        lastReport = performance.now();
        rig.progress(`deliveries: ${done}/${ids.length} received as expected`);
      }
      if (done < ids.length) return false;
      // The accepted webhooks' rows: a POST refused after its workflow started (outcome unknown) adds a row of its own.
      return (await deliveredAmong(knex, ids)) === ids.length;
    });
    const finished = performance.now();
    const cpuAfter = rig.processes.map((p) => p.cpuSeconds());
    const machineCpu = machineBusySeconds() - machineBefore;
    const acceptedTimes = [...accepted.values()];
    const firstAccepted = Math.min(...acceptedTimes);
    const lastReceipt = Math.max(...ids.map((id) => partner.receipts.get(id)?.[expected - 1] ?? -Infinity));
    const counts = ids.map((id) => partner.receipts.get(id)?.length ?? 0);
    const latencies = ids
      .filter((id) => partner.receipts.has(id))
      .map((id) => partner.receipts.get(id)![0] - accepted.get(id)!);
    const { delivered, total } = await rows();
    const attempts = await attemptOutcomes(knex, prefix);
    const expectedAttempt = (a: AttemptOutcome) =>
      failFirst
        ? (a.attempt === 1 && a.http_status === 500) || (a.attempt === 2 && a.succeeded)
        : a.attempt === 1 && a.succeeded;
    return {
      count,
      accepted: accepted.size,
      acceptedIds: new Set(ids),
      refused,
      timedOut: !completed,
      timeoutSeconds: timeoutMs / 1000,
      ingestSeconds: (Math.max(...acceptedTimes) - started) / 1000, // first POST sent to last 202
      endToEndSeconds: (lastReceipt - firstAccepted) / 1000, // first 202 to the last receipt the part expects
      totalSeconds: (lastReceipt - started) / 1000,
      untilDeliveredSeconds: (finished - started) / 1000, // until every row was delivered: the CPU figures' interval
      deliveriesPerSecond: ids.length / ((lastReceipt - firstAccepted) / 1000),
      latencyMs: quantiles(latencies), // each 202 to the partner's first receipt
      answerMs: quantiles(answerMs), // each POST sent (on a schedule: due) to its answer
      answerSamples: answerMs,
      dueSamples: dueMs,
      missing: counts.filter((n) => n < expected).length,
      surplus: counts.filter((n) => n > expected).length,
      strays: [...partner.receipts.keys()].filter((id) => !accepted.has(id)).length,
      expectedReceipts: expected,
      deliveredRows: delivered,
      rows: total,
      deliveredOnSecondAttempt: sum(attempts.filter((a) => a.attempt === 2 && a.succeeded)),
      laterAttempts: sum(attempts.filter((a) => a.attempt > 2)),
      unexpectedAttempts: attempts
        .filter((a) => !expectedAttempt(a))
        .map(
          (a) =>
            `attempt ${a.attempt}, ${a.succeeded ? 'succeeded' : 'failed'}: ${a.http_status ?? a.error_class}${a.error ? ` (${a.error})` : ''}, ${a.count} ×`,
        ),
      // Most webhooks waiting on their retry timer at once (Part 2).
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

/** POST /internal/v1/partner/{pause,resume}, as an operator does. */
export async function operate(rig: Rig, action: 'pause' | 'resume', body: object = {}): Promise<void> {
  const headers = { authorization: `Bearer ${INTERNAL_API_TOKEN}`, 'content-type': 'application/json' };
  const res = await request(`${rig.apiUrl}/internal/v1/partner/${action}`, {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
  });
  await res.body.dump();
  if (res.statusCode !== 200) throw new Error(`${action} answered ${res.statusCode}`);
}

/** Throws unless every webhook of a part was accepted, received exactly as expected and recorded delivered: a partial run is no figure. */
export function assertDelivered(part: PartFigures, what: string): void {
  const refused = [...part.refused].map(([answer, count]) => `${count} × ${answer}`).join(', ');
  const problems = [
    part.accepted < part.count && `${part.count - part.accepted} of ${part.count} POSTs not accepted (${refused})`,
    part.timedOut && `gave up waiting after ${part.timeoutSeconds} s`,
    part.missing && `${part.missing} webhooks received fewer than ${part.expectedReceipts} times`,
    part.surplus && `${part.surplus} webhooks received more than ${part.expectedReceipts} times`,
    part.strays && `${part.strays} receipts of unknown webhook ids`,
    part.deliveredRows < part.accepted && `${part.accepted - part.deliveredRows} rows not delivered`,
  ].filter(Boolean);
  if (problems.length) throw new Error(`${what}: ${problems.join('; ')}`);
}

/**
 * POSTs the webhooks (benchEvent, on `keys` keys) to the internal API (with `token`, the shared one by default): the time of each 202 by the webhook_id in its body, and how long
 * each answer took. With `perSecond`, webhook i is sent at start + i / perSecond whatever the answers (an open
 * loop: a slow API cannot slow the load down), and an answer counts from when its POST was due; `stop` ends that loop early.
 */
export async function ingest(
  apiUrl: string,
  prefix: string,
  count: number,
  {
    perSecond,
    token = INTERNAL_API_TOKEN,
    stop,
    keys,
  }: { perSecond?: number; token?: string; stop?: AbortSignal; keys?: number } = {},
) {
  const accepted = new Map<string, number>();
  const refused = new Map<string, number>();
  const answerMs: number[] = [];
  const dueMs: number[] = []; // when each answered POST was due (performance.now()), beside its answerMs
  const post = async (i: number, due = performance.now()) => {
    try {
      const res = await request(`${apiUrl}/internal/v1/webhooks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(benchEvent(prefix, i, keys)),
      });
      const at = performance.now();
      answerMs.push(at - due);
      dueMs.push(due);
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
    for (let i = 0; i < count && !stop?.aborted; i++) {
      const due = start + (i * 1000) / perSecond;
      if (due > performance.now()) await delay(due - performance.now());
      sent.push(post(i, due));
    }
    await Promise.all(sent);
  }
  return { accepted, refused, answerMs, dueMs };
}

async function deliveredAmong(knex: Knex, ids: readonly string[]): Promise<number> {
  // One array parameter: a long stream's ids would pass PostgreSQL's 65,535 parameters as a list.
  const [row] = await runSql<{ n: number }>(
    knex,
    sql`SELECT count(*)::int AS n FROM webhook_events WHERE id = ANY(${ids}::uuid[]) AND status = 'delivered'`,
  );
  return row.n;
}

async function rowCounts(knex: Knex, prefix: string): Promise<{ delivered: number; total: number }> {
  const [row] = await knex('webhook_events')
    .whereRaw('starts_with(event_id, ?)', [`${prefix}-`])
    .select(
      knex.raw("count(*) filter (where status = 'delivered')::int as delivered"),
      knex.raw('count(*)::int as total'),
    );
  return row;
}

type AttemptOutcome = {
  attempt: number;
  succeeded: boolean;
  http_status: number | null;
  error_class: string | null;
  error: string | null;
  count: number;
};

/** The recorded attempts of a part, grouped by number and outcome. */
async function attemptOutcomes(knex: Knex, prefix: string): Promise<AttemptOutcome[]> {
  return knex('webhook_attempts as a')
    .join('webhook_events as e', 'e.id', 'a.webhook_id')
    .whereRaw('starts_with(e.event_id, ?)', [`${prefix}-`])
    .select(
      'a.attempt',
      'a.succeeded',
      'a.http_status',
      'a.error_class',
      knex.raw('left(a.error_message, 160) as error'),
      knex.raw('count(*)::int as count'),
    )
    .groupBy(1, 2, 3, 4, 5)
    .orderBy([1, 2, 3, 4, 5]);
}

const sum = (outcomes: AttemptOutcome[]) => outcomes.reduce((total, outcome) => total + outcome.count, 0);

/** Polls `check` until it holds (true) or the time is up (false); fails at once when a service died. */
export async function waitUntil(
  rig: Pick<Rig, 'services' | 'progress'>,
  what: string,
  timeoutMs: number,
  check: () => Promise<boolean>,
): Promise<boolean> {
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
  const changes = receipts
    .filter((r) => r.length >= 2)
    .flatMap((r): Array<[number, number]> => [
      [r[0], 1],
      [r[1], -1],
    ]);
  changes.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let waiting = 0;
  let peak = 0;
  for (const [, change] of changes) peak = Math.max(peak, (waiting += change));
  return peak;
}
