import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { RELEASE_CONCURRENCY } from '../../application/partner/partner-recovery';
import { bareWorkflowBundle, measureBare } from '../floor/bare';
import type { FloorRun } from '../floor/report';
import { startPartnerServer, type PartnerServer } from '../harness/partner';
import { machineBusySeconds } from '../harness/proc';
import { commitOf, table, verdict } from '../harness/render';
import type { BenchContext, BenchmarkSuite } from '../harness/suite';
import { benchTemporalBinary, temporalVersion } from '../harness/temporal';
import {
  deliveredHistory,
  operate,
  runPart,
  startServiceRig,
  waitForHealthz,
  waitUntil,
  WARMUP_WEBHOOKS,
} from '../harness/webhook-part';

/** Webhooks held (BENCH_DRAIN_WEBHOOKS), the cap, the workers sharing it; the goals: a drain ≥ 0.9 × the cap, no second above 1.3 × it. */
const [HELD, CAP, WORKERS, GOAL_RATIO, GOAL_BURST] = [
  Number(process.env.BENCH_DRAIN_WEBHOOKS ?? 10_000),
  40,
  2,
  0.9,
  1.3,
];
type DrainFigures = Awaited<ReturnType<typeof measureDrain>> & { name: string };

/** A held backlog drained at the cap: a pause, HELD webhooks posted and held, resume; this code and BENCH_BEFORE_ROOT's, each on a dev server of its own. */
export const drainSuite: BenchmarkSuite = {
  name: 'drain',
  title: 'Held backlog drain (pause, resume, two workers at the cap)',
  async run(ctx) {
    const executable = benchTemporalBinary();
    const before = process.env.BENCH_BEFORE_ROOT;
    const checkouts = [
      { name: `this code (${commitOf()})`, root: undefined },
      ...(before ? [{ name: `before (${commitOf(before) ?? before})`, root: before }] : []),
    ];
    const partner = await startPartnerServer();
    try {
      // Where the time goes: the bare workflow held at the same scale and woken by signals as fast as they go, no service around it.
      const workflowBundle = await bareWorkflowBundle();
      ctx.progress(`drain: the bare workflow, ${HELD} held and woken by signal`);
      const bare = await measureBare({
        partner,
        deliveries: HELD,
        warmup: WARMUP_WEBHOOKS,
        progress: ctx.progress,
        postgresCpuSeconds: () => NaN,
        executable,
        workflowBundle,
        eager: false,
        wokenBySignal: RELEASE_CONCURRENCY,
      });
      const measured: DrainFigures[] = [];
      for (const { name, root } of checkouts)
        measured.push({ name, ...(await measureDrain(ctx, partner, executable, root)) });
      return reportDrain(temporalVersion(executable), measured, bare);
    } finally {
      await partner.close();
    }
  },
};

async function measureDrain(
  { databaseUrl, knex, progress }: BenchContext,
  partner: PartnerServer,
  executable: string,
  root?: string,
) {
  const cleanups: Array<() => Promise<unknown>> = [];
  try {
    const { server, spawnWorker, rigWith } = await startServiceRig({
      databaseUrl,
      knex,
      partner,
      executable,
      cleanups,
      progress,
      root,
      env: { PARTNER_MAX_PER_SECOND: String(CAP) },
    });
    const workers = [];
    for (let i = 0; i < WORKERS; i++) workers.push(await spawnWorker());
    const rig = rigWith(workers);
    await waitForHealthz(rig, 'the API', rig.apiUrl, 30_000);
    const prefix = `drain-${Date.now().toString(36)}`;
    const ofPart = () => knex('webhook_events').whereRaw('starts_with(event_id, ?)', [`${prefix}-`]);
    await runPart(rig, { prefix: `warm-${prefix}`, count: WARMUP_WEBHOOKS, failFirst: false });
    await operate(rig, 'pause', { reason: 'bench: a held backlog' });
    progress(`drain: ${HELD} webhooks posted while paused (${root ?? 'this code'})`);
    let [resumedAt, machineBefore] = [NaN, NaN];
    const part = await runPart(rig, {
      prefix,
      count: HELD,
      failFirst: false,
      afterIngest: async (accepted) => {
        const held = async () => Number((await ofPart().whereNotNull('held_since').count({ n: '*' }))[0].n);
        if (!(await waitUntil(rig, 'every webhook held', 600_000, async () => (await held()) >= accepted)))
          throw new Error('the webhooks were not all held');
        progress(`drain: ${accepted} held; resume`);
        [resumedAt, machineBefore] = [performance.now(), machineBusySeconds()];
        await operate(rig, 'resume');
      },
    });
    const machineBusy =
      (machineBusySeconds() - machineBefore) / os.cpus().length / ((performance.now() - resumedAt) / 1000);
    if (part.timedOut || part.missing)
      throw new Error(
        `drain of ${prefix}: ${part.missing} accepted webhooks not delivered${part.timedOut ? ', timed out' : ''}`,
      );
    const history = await deliveredHistory(rig, server.address, prefix);
    const rows: Array<{ id: string }> = await ofPart().orderBy(['accepted_at', 'id']).select('id');
    // The accepted webhooks in the order of acceptance: the API's 503s, drained too, are counted apart.
    const arrivals = rows.filter((row) => part.acceptedIds.has(row.id)).map((row) => partner.receipts.get(row.id)![0]);
    const drainSeconds = (Math.max(...arrivals) - resumedAt) / 1000;
    // The most POSTs within any 1,000 ms, and how much later a webhook arrived than one accepted after it, at most.
    const posts = [...partner.receipts.values()].flat().sort((a, b) => a - b);
    let [busiest, outOfOrderMs, earliestLater] = [0, 0, Infinity];
    for (let first = 0, last = 0; last < posts.length; last++) {
      while (posts[last] - posts[first] >= 1000) first++;
      busiest = Math.max(busiest, last - first + 1);
    }
    for (let i = arrivals.length - 1; i >= 0; i--)
      [outOfOrderMs, earliestLater] = [
        Math.max(outOfOrderMs, arrivals[i] - earliestLater),
        Math.min(earliestLater, arrivals[i]),
      ];
    const repeats = [...partner.receipts.values()].filter((r) => r.length > 1).length;
    return {
      held: arrivals.length,
      refused: part.count - part.accepted,
      drainSeconds,
      ratio: arrivals.length / drainSeconds / CAP,
      busiest,
      outOfOrderMs,
      repeats,
      history,
      firstPostMs: Math.min(...arrivals) - resumedAt,
      machineBusy,
    };
  } finally {
    for (const cleanup of cleanups.reverse())
      await cleanup().catch((error: unknown) => progress(`drain: cleanup failed: ${String(error)}`));
  }
}

function reportDrain(temporal: string, runs: readonly DrainFigures[], bare: FloorRun): string {
  const row = (label: string, value: (f: DrainFigures) => string | number) => [label, ...runs.map(value)];
  return [
    `\`temporal server start-dev\` (${temporal}) with npm start's SQLite settings; \`partner-service api\` and ${WORKERS} \`partner-service worker\` processes at PARTNER_MAX_PER_SECOND ${CAP} (the rest as in the deliveries section), the bench PostgreSQL and partner server. ` +
      "After a warm-up, a pause through `POST /internal/v1/partner/pause`, then the webhooks are posted; once every one is held, `POST /internal/v1/partner/resume`. The drain runs from the resume to the last webhook's arrival at the partner; " +
      '"busiest second" is the most POSTs the partner got within any 1,000 ms; "out of order" is how much later a webhook arrived than one accepted after it, at most. Each checkout runs on a dev server of its own.',
    '',
    table(
      ['measure', ...runs.map((r) => `>${r.name}`)],
      [
        row(
          'webhooks accepted, held, then delivered (POSTs the loaded API answered 503 as its Temporal start timed out)',
          (f) => `${f.held.toLocaleString('en')} (${f.refused})`,
        ),
        row(
          `drain rate / cap (goal ≥ ${GOAL_RATIO} ×)`,
          (f) => `**${f.ratio.toFixed(2)} ×** (${(f.ratio * CAP).toFixed(1)}/s, ${f.drainSeconds.toFixed(1)} s)`,
        ),
        row(`busiest second at the partner (goal ≤ ${GOAL_BURST * CAP})`, (f) => f.busiest),
        row('resume to the first POST', (f) => `${f.firstPostMs.toFixed(0)} ms`),
        row('out of order, at most', (f) => `${(f.outOfOrderMs / 1000).toFixed(2)} s`),
        row('webhooks POSTed more than once', (f) => f.repeats),
        row(
          'Temporal actions of one delivery (events)',
          (f) => `${f.history.counts.actions} (${f.history.counts.events})`,
        ),
        row('machine busy during the drain (all cores)', (f) => `${(f.machineBusy * 100).toFixed(0)} %`),
        row('goals', (f) => verdict(f.ratio >= GOAL_RATIO && f.busiest <= GOAL_BURST * CAP && f.repeats === 0)),
      ],
    ),
    '',
    `The floor of a release on this machine in the same run: the bare workflow (bench/floor/bare-workflow/, \`bareHeldDelivery\`, its worker in the bench process), ${bare.deliveries.toLocaleString('en')} started ` +
      `and waiting for a signal, then woken ${RELEASE_CONCURRENCY} signals in flight (the guard's RELEASE_CONCURRENCY) as fast as they go, unpaced: **${bare.deliveriesPerSecond.toFixed(1)}/s** ` +
      `from the first signal to the last POST, ${(bare.deliveriesPerSecond / CAP).toFixed(2)} × the cap; ${bare.history.actions} actions (${bare.history.events} events) a delivery.`,
  ].join('\n');
}
