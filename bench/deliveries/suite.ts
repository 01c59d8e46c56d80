import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { request } from 'undici';
import { webhookHeaders } from '../../events/delivery-headers';
import { envelopeBody } from '../../events/envelope';
import { inParallel } from '../../lib/in-parallel';
import { LOCAL_SQLITE_PRAGMAS } from '../../temporal/local-temporal';
import { RETRY_DELAYS_MS } from '../../lib/delivery';
import { startPartnerServer, type PartnerServer } from '../harness/partner';
import type { BenchmarkSuite } from '../harness/suite';
import { benchTemporalBinary, temporalVersion } from '../harness/temporal';
import type { ServiceProcess } from '../harness/service';
import {
  benchEvent,
  CONCURRENCY,
  deliveredHistory,
  EVENT,
  PARTNER_ACCESS_TOKEN,
  runPart,
  startServiceRig,
  waitForHealthz,
  WARMUP_WEBHOOKS,
  type Rig,
} from '../harness/webhook-part';
import { reportDeliveries } from './report';

const WEBHOOKS = 2_000;
const RETRIED_WEBHOOKS = 5_000;
/** Part 2 should end within about 5 minutes, as Part 1 runs twice; a retried webhook costs about two deliveries. */
const RETRY_BUDGET_SECONDS = 5 * 60;
/** Part 3: an open-loop rate at half the goal, for latency below capacity, long enough for a stable p99. */
const STEADY_PER_SECOND = 50;
const STEADY_SECONDS = 60;
/** Workers in the second run of Part 1. */
const SCALED_WORKERS = 2;
const FIRST_RETRY_SECONDS = RETRY_DELAYS_MS[0] / 1000;

/**
 * Webhook delivery end to end, Parts 1 to 3: a real `temporal server start-dev`, the service's `api` and `worker`
 * as separate processes, and a partner server in this process that records when each webhook arrives.
 */
export const deliveriesSuite: BenchmarkSuite = {
  name: 'deliveries',
  title: 'Webhook deliveries (Temporal dev server)',
  async run({ databaseUrl, knex, progress }) {
    const executable = benchTemporalBinary();
    const cleanups: Array<() => Promise<unknown>> = [];
    try {
      const partner = await startPartnerServer();
      cleanups.push(() => partner.close());
      progress(`deliveries: baseline, ${WEBHOOKS} POSTs straight to the partner`);
      await baseline(partner); // warms up the loop and the partner server
      const baselineRate = await baseline(partner);

      const { server, spawnWorker, rigWith } = await startServiceRig({
        databaseUrl,
        knex,
        partner,
        executable,
        cleanups,
        progress,
      });
      const first = await spawnWorker();
      let rig = rigWith([first]);
      await waitForHealthz(rig, 'the API', rig.apiUrl, 30_000);

      const tag = Date.now().toString(36);
      // Also waits for the workers to poll.
      const warmUp = (r: Rig, name: string) => {
        progress(`deliveries: warm-up, ${WARMUP_WEBHOOKS} webhooks (${name})`);
        return runPart(r, { prefix: `warm-${name}-${tag}`, count: WARMUP_WEBHOOKS, failFirst: false });
      };
      await warmUp(rig, '1-worker');
      progress(`deliveries: part 1, ${WEBHOOKS} webhooks, 1 worker process`);
      const part1 = await runPart(rig, { prefix: `p1-${tag}`, count: WEBHOOKS, failFirst: false });
      const firstTry = await deliveredHistory(rig, server.address, `p1-${tag}`);
      await first.stop();

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
      const part3 = await runPart(rig, {
        prefix: `p3-${tag}`,
        count: steadyCount,
        failFirst: false,
        perSecond: STEADY_PER_SECOND,
      });

      const fit = Math.floor(((RETRY_BUDGET_SECONDS - FIRST_RETRY_SECONDS) * part1.deliveriesPerSecond) / 2);
      const retried = Math.max(1, Math.min(RETRIED_WEBHOOKS, fit));
      progress(
        `deliveries: part 2, ${retried} webhooks whose first attempt fails (${part1.deliveriesPerSecond.toFixed(1)}/s in part 1)`,
      );
      const part2 = await runPart(rig, { prefix: `p2-${tag}`, count: retried, failFirst: true });
      const retriedOnce = await deliveredHistory(rig, server.address, `p2-${tag}`);

      return reportDeliveries({
        temporalVersion: temporalVersion(executable),
        sqlitePragmas: LOCAL_SQLITE_PRAGMAS,
        bodyBytes: Buffer.byteLength(envelopeBody(benchEvent(`p1-${tag}`, 0))),
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
          { label: 'a Part 2 webhook (first POST answered 500)', ...retriedOnce },
        ],
      });
    } finally {
      // Reverse order: the service before Temporal, Temporal before its directory.
      for (const cleanup of cleanups.reverse())
        await cleanup().catch((error: unknown) => progress(`deliveries: cleanup failed: ${String(error)}`));
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
