import { startBenchTemporal, benchTemporalBinary, temporalVersion } from '../harness/temporal';
import { startPartnerServer } from '../harness/partner';
import type { BenchmarkSuite } from '../harness/suite';
import { measureFirstTryCost, type Ordering } from './first-try-cost';
import { measureBacklog, measureManyKeys, measureOneKey, withOrderedRig } from './parts';
import { reportOrdering, type ManyKeysRun } from './report';
import { measureMutexAlternative, mutexWorkflowBundle, MUTEX_CASES } from './mutex-alternative';

/** Part 1: webhooks (BENCH_ORDERING_WEBHOOKS) over MANY_KEYS keys, in ROUNDS (BENCH_ORDERING_ROUNDS) whose order of on and off alternates, at each cap. */
const WEBHOOKS = Number(process.env.BENCH_ORDERING_WEBHOOKS ?? 10_000);
const ROUNDS = Number(process.env.BENCH_ORDERING_ROUNDS ?? 2);
const MANY_KEYS = 10_000;
/** The drain suite's cap, and the deliveries suite's 100,000/s: no cap in effect, what ordering costs the service itself. */
const CAPS = [40, 100_000] as const;
/** Part 2: first-try deliveries measured of each setting. */
const COST_SAMPLES = 5;
/** Part 3: webhooks on one key (BENCH_ORDERING_ONE_KEY), at each partner latency. */
const ONE_KEY = Number(process.env.BENCH_ORDERING_ONE_KEY ?? 200);
const LATENCIES_MS = [0, 20] as const;
/** Part 4: the backlog (BENCH_ORDERING_BACKLOG) over BACKLOG_KEYS keys, drained at BACKLOG_CAP. */
const BACKLOG = Number(process.env.BENCH_ORDERING_BACKLOG ?? 2_000);
const [BACKLOG_KEYS, BACKLOG_CAP] = [50, 40];

/** Per-entity ordering against none, each measurement on a fresh dev server and service of its own, one partner server for all. */
export const orderingSuite: BenchmarkSuite = {
  name: 'ordering',
  title: 'Per-entity ordering: on against off, side by side',
  async run(ctx) {
    const executable = benchTemporalBinary();
    const partner = await startPartnerServer();
    try {
      const manyKeys: ManyKeysRun[] = [];
      for (let round = 1; round <= ROUNDS; round++) {
        const order: Ordering[] = round % 2 ? ['off', 'entity'] : ['entity', 'off'];
        for (const cap of CAPS) {
          for (const ordering of order) {
            ctx.progress(
              `ordering: round ${round}, ${WEBHOOKS} webhooks on ${MANY_KEYS} keys, WEBHOOK_ORDERING=${ordering}, cap ${cap}/s`,
            );
            manyKeys.push({
              round,
              cap,
              ordering,
              ...(await withOrderedRig(ctx, partner, executable, { ordering, cap }, (rig) =>
                measureManyKeys(rig, WEBHOOKS, MANY_KEYS),
              )),
            });
          }
        }
      }
      ctx.progress(`ordering: first-try cost, ${COST_SAMPLES} deliveries each`);
      const temporal = await startBenchTemporal(executable);
      const costs = [];
      try {
        for (const ordering of ['off', 'entity'] as const)
          costs.push(
            await measureFirstTryCost({
              ...ctx,
              partner,
              address: temporal.server.address,
              ordering,
              samples: COST_SAMPLES,
            }),
          );
      } finally {
        await temporal.stop();
      }
      ctx.progress(`ordering: ${ONE_KEY} webhooks on one key`);
      const oneKey = await withOrderedRig(
        ctx,
        partner,
        executable,
        { ordering: 'entity', cap: CAPS[1] },
        async (rig) => {
          const runs = [];
          for (const latencyMs of LATENCIES_MS) runs.push(await measureOneKey(rig, ONE_KEY, latencyMs));
          return runs;
        },
      );
      ctx.progress(`ordering: a backlog of ${BACKLOG} webhooks on ${BACKLOG_KEYS} keys, paused`);
      const backlog = await withOrderedRig(
        ctx,
        partner,
        executable,
        { ordering: 'entity', cap: BACKLOG_CAP },
        (rig, address) => measureBacklog(rig, address, BACKLOG, BACKLOG_KEYS),
      );
      ctx.progress("ordering: the alternative, a lock workflow per key (Temporal's mutex sample), against a bare item");
      const workflowBundle = await mutexWorkflowBundle();
      const mutex = [];
      for (const { name, items, keys } of MUTEX_CASES)
        mutex.push({
          name,
          ...(await measureMutexAlternative({ executable, items, keys, progress: ctx.progress, workflowBundle })),
        });
      return reportOrdering({
        mutex,
        temporal: temporalVersion(executable),
        webhooks: WEBHOOKS,
        keys: MANY_KEYS,
        manyKeys,
        costs,
        costSamples: COST_SAMPLES,
        oneKeyWebhooks: ONE_KEY,
        oneKey,
        backlog,
        backlogCap: BACKLOG_CAP,
      });
    } finally {
      await partner.close();
    }
  },
};
