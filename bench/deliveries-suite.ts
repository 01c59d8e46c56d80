import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { request } from 'undici';
import { webhookHeaders } from '../events/delivery-headers';
import { findFreePort } from '../db/embedded-postgres';
import { envelopeBody } from '../events/envelope';
import { LOCAL_SQLITE_PRAGMAS } from '../temporal/local-temporal';
import { RETRY_DELAYS_MS } from '../workflows/types';
import { topSelfTime } from './cpu-profile';
import { reportDeliveries } from './deliveries-report';
import {
  CONCURRENCY,
  deliveredHistory,
  EVENT,
  serviceEnv,
  ownCpuSeconds,
  PARTNER_ACCESS_TOKEN,
  pidProcess,
  runPart,
  waitUntil,
  WARMUP_WEBHOOKS,
  type Rig,
} from './delivery-part';
import { measureFloor } from './floor';
import { isolatedDeliveryHistories } from './history-actions';
import { inParallel } from '../lib/in-parallel';
import { startPartnerServer, type PartnerServer } from './partner-server';
import { postmasterPid, treeCpuSeconds } from './proc-stats';
import { spawnService, type ServiceProcess } from './service-process';
import type { BenchmarkSuite } from './suite';
import { benchTemporalBinary, startBenchTemporal } from './temporal-server';

const WEBHOOKS = 2_000;
const RETRIED_WEBHOOKS = 5_000;
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

/**
 * Webhook delivery end to end: first the service (`start`) against the bare workflow (bench/floor.ts), then
 * a real `temporal server start-dev`, the service's `api` and `worker` as separate processes, and a partner
 * server in this process that records when each webhook arrives.
 */
export const deliveriesSuite: BenchmarkSuite = {
  name: 'deliveries',
  async run({ databaseUrl, knex, progress }) {
    const executable = benchTemporalBinary();
    const cleanups: Array<() => Promise<unknown>> = [];
    try {
      const partner = await startPartnerServer();
      cleanups.push(() => partner.close());
      // First, before anything else loads the machine or the bench database: the service against the bare workflow.
      const floor = await measureFloor({ executable, databaseUrl, knex, partner, progress });
      progress(`deliveries: baseline, ${WEBHOOKS} POSTs straight to the partner`);
      await baseline(partner); // warms up the loop and the partner server
      const baselineRate = await baseline(partner);

      // Before the shared dev server, as it fails fast: its own dev server, stopped before anything is measured.
      progress('deliveries: histories of a first-try and an always-refused delivery, timers ÷1000, on a dev server of their own');
      const isolated = await isolatedDeliveryHistories({ executable, knex, partner, partnerAccessToken: PARTNER_ACCESS_TOKEN, event: EVENT });

      const temporal = await startBenchTemporal(executable);
      cleanups.push(() => temporal.stop());
      const { server } = temporal;
      const env = { ...serviceEnv(databaseUrl, partner.url), TEMPORAL_ADDRESS: server.address, TEMPORAL_TASK_QUEUE: `bench-deliveries-${randomUUID()}` };
      // Each worker serves /healthz and /metrics on a port of its own: two on the default 3001 collide.
      const spawnWorker = async (nodeArgs: readonly string[] = []) => {
        const worker = spawnService('worker', { ...env, WORKER_HTTP_PORT: String(await findFreePort()) }, nodeArgs);
        cleanups.push(() => worker.stop());
        return worker;
      };
      const profileDir = CPU_PROFILE ? await mkdtemp(path.join(os.tmpdir(), 'pis-bench-cpuprof-')) : undefined;
      if (profileDir) cleanups.push(() => rm(profileDir, { recursive: true, force: true }));
      const profiled = await spawnWorker(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []);
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

      const scaled: ServiceProcess[] = [];
      for (let i = 0; i < SCALED_WORKERS; i++) scaled.push(await spawnWorker());
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
        floor,
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
