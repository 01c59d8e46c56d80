import { setTimeout as delay } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import type { Knex } from 'knex';
import { createRetentionActivities } from '../../activities/personal-data/retention';
import { envelopeBody } from '../../events/envelope';
import { loadConfig } from '../../lib/config';
import { retentionScheduleId, type RetentionRunRef, type RetentionSummary } from '../../lib/retention';
import {
  RETENTION_BATCH_SIZE,
  RETENTION_PAUSE_RATIO,
  type PurgeProgress,
} from '../../store/personal-data/retention-purge';
import { withCleanups, type Cleanups } from '../harness/cleanups';
import { startPartnerServer } from '../harness/partner';
import { table, verdict } from '../harness/render';
import { quantiles } from '../harness/stats';
import type { BenchmarkSuite } from '../harness/suite';
import { benchTemporalBinary, temporalVersion } from '../harness/temporal';
import {
  EVENT,
  runPart,
  startServiceRig,
  waitForHealthz,
  WARMUP_WEBHOOKS,
  type PartFigures,
} from '../harness/webhook-part';

/** Expired rows seeded (BENCH_RETENTION_ROWS); POSTs a second; slices of SLICE_SECONDS, the first GUARD_SECONDS of each not counted; the p99 goal; the policy's days. */
const [ROWS, PER_SECOND, SLICE_SECONDS, GUARD_SECONDS, MAX_SLICES, GOAL_RATIO, PAYLOAD_DAYS, LOG_DAYS, RESAMPLES] = [
  Number(process.env.BENCH_RETENTION_ROWS ?? 1_000_000),
  50,
  10,
  1,
  200,
  1.2,
  30,
  90,
  2000,
];
/** Which slices of each block of four purge: off, on, on, off, so that a steady drift of the machine falls on both alike. */
const BLOCK = [false, true, true, false] as const;
/** A slice of the stream, with each measured process's CPU seconds at its start and end. */
type Slice = { purge: boolean; startMs: number; endMs: number; purged: number; cpu: [number[], number[]] };

/**
 * ROWS expired webhooks seeded; then one open-loop stream of POSTs at 50/s through the API while the purge is
 * switched on and off in slices of 10 s, until it has purged them all. The purge in a slice is the worker's own
 * activity (purgeDueWebhooks, run here so that the bench can stop it at the slice's end), with its batches and pauses.
 */
export const retentionSuite: BenchmarkSuite = {
  name: 'retention',
  title: 'Retention purge beside ingestion (1,000,000 expired rows)',
  run: ({ databaseUrl, knex, progress }) =>
    withCleanups('retention', progress, async (cleanups) => {
      const [executable, partner, queue] = [
        benchTemporalBinary(),
        await startPartnerServer().then((p) => (cleanups.push(() => p.close()), p)),
        `bench-retention-${Date.now().toString(36)}`,
      ];
      // The dev server's SQLite file on tmpfs: on disk, its writes would share this machine's one disk with PostgreSQL's purge, which a deployment's own Temporal cluster does not.
      const { server, env, spawnWorker, rigWith } = await startServiceRig({
        databaseUrl,
        knex,
        partner,
        executable,
        cleanups,
        progress,
        env: { TEMPORAL_TASK_QUEUE: queue },
        temporalOnTmpfs: true,
      });
      const rig = rigWith([await spawnWorker()]);
      await pauseSchedule(server.address, queue, cleanups);
      await waitForHealthz(rig, 'the API', rig.apiUrl, 30_000).then(() =>
        runPart(rig, { prefix: `warm-${queue}`, count: WARMUP_WEBHOOKS, failFirst: false }),
      );
      progress(`retention: seeding ${ROWS} expired webhooks with one attempt each`);
      const seedSeconds = await seed(knex);
      const activities = createRetentionActivities({
        config: () =>
          loadConfig({
            ...env,
            WEBHOOK_PAYLOAD_RETENTION_DAYS: String(PAYLOAD_DAYS),
            WEBHOOK_LOG_RETENTION_DAYS: String(LOG_DAYS),
          }),
        knex,
      });
      const activity = new MockActivityEnvironment({}, { logger: new DefaultLogger('ERROR', () => {}) });
      const run: RetentionRunRef = await activity.run(activities.startRetentionRun, { trigger: 'manual' as const });
      const stop = new AbortController();
      const stream = runPart(rig, {
        prefix: `stream-${queue}`,
        count: PER_SECOND * SLICE_SECONDS * MAX_SLICES,
        failFirst: false,
        perSecond: PER_SECOND,
        stop: stop.signal,
      });
      const slices = await switchPurge(
        (budgetMs): Promise<PurgeProgress> => activity.run(activities.purgeDueWebhooks, { run, budgetMs }),
        () => rig.processes.map((p) => p.cpuSeconds()),
        progress,
      );
      stop.abort();
      const part = await stream;
      const record: RetentionSummary = await activity.run(activities.finishRetentionRun, { runId: run.runId });
      const [left] = (
        await knex.raw(
          `SELECT count(*)::int AS n, count(*) FILTER (WHERE payload_removed_at IS NULL)::int AS bodies, (SELECT count(*)::int FROM retention_runs) AS runs FROM webhook_events WHERE event_id LIKE 'seed-%'`,
        )
      ).rows;
      return report(
        temporalVersion(executable),
        seedSeconds,
        slices,
        part,
        record,
        left,
        rig.processes.map((p) => p.role),
      );
    }),
};

/** Pauses the worker's hourly retention schedule (a pause survives the worker's updates of it): the bench's purge is then the only one. */
async function pauseSchedule(address: string, queue: string, cleanups: Cleanups): Promise<void> {
  const connection = await Connection.connect({ address }).then((c) => (cleanups.push(() => c.close()), c));
  const schedule = new Client({ connection }).schedule.getHandle(retentionScheduleId(queue));
  for (
    let tries = 0;
    !(await schedule.describe().then(
      () => true,
      () => false,
    ));
    tries++
  ) {
    if (tries === 60) throw new Error('the worker made no retention schedule within 30 s');
    await delay(500);
  }
  await schedule.pause('the retention bench runs the purge itself, switched on and off');
}

/** Slices in blocks of BLOCK, the purge running its batches to the end of each of its own; once it is done, slices without it until there are as many. */
async function switchPurge(
  purge: (budgetMs: number) => Promise<PurgeProgress>,
  cpuNow: () => number[],
  progress: (m: string) => void,
): Promise<Slice[]> {
  const slices: Slice[] = [];
  let done = false;
  const count = (on: boolean) => slices.filter((s) => s.purge === on).length;
  for (let k = 0; k < MAX_SLICES && (!done || count(false) < count(true)); k++) {
    const on = BLOCK[k % BLOCK.length];
    if (on && done) continue;
    const [startMs, cpuAtStart] = [performance.now(), cpuNow()];
    let [endMs, purged] = [startMs + SLICE_SECONDS * 1000, 0];
    if (on) {
      const result = await purge(endMs - performance.now());
      [purged, done] = [result.bodiesRemoved + result.rowsDeleted, result.done];
      // The slice that finished the purge ends there: what follows it is no longer beside the purge.
      if (done) endMs = Math.min(endMs, performance.now());
    }
    await delay(Math.max(0, endMs - performance.now()));
    slices.push({ purge: on, startMs, endMs, purged, cpu: [cpuAtStart, cpuNow()] });
    if (k % 8 === 7)
      progress(`retention: ${slices.length} slices, ${slices.reduce((n, s) => n + s.purged, 0)} rows purged`);
  }
  return slices;
}

/** ROWS finished webhooks with the example body and one attempt each: even ones past the log retention, odd ones past the payload retention only. */
async function seed(knex: Knex): Promise<number> {
  const started = Date.now();
  await knex.raw(`DELETE FROM webhook_events WHERE event_id LIKE 'seed-%'; TRUNCATE retention_runs`);
  await knex.raw(
    `INSERT INTO webhook_events (id, event_id, event_type, action, company_id, body, workflow_id, run_id, status, start_reported, accepted_at, created_at, finished_at)
     SELECT gen_random_uuid(), 'seed-' || g, 'candidate', 'new', 'bench-retention', ?::json, 'wf-seed-' || g, 'run-seed', 'delivered', true, t, t, t FROM generate_series(1, ?::int) g,
       LATERAL (SELECT now() - (CASE WHEN g % 2 = 0 THEN ?::int ELSE ?::int END) * interval '1 day' - g * interval '1 second' AS t) at`,
    [envelopeBody(EVENT), ROWS, LOG_DAYS + 10, PAYLOAD_DAYS + 10],
  );
  await knex.raw(`INSERT INTO webhook_attempts (webhook_id, attempt, scheduled_at, started_at, duration_ms, http_status, succeeded, response_body)
     SELECT id, 1, finished_at, finished_at, 20, 200, true, '{"received":true}' FROM webhook_events WHERE event_id LIKE 'seed-%'`);
  // The seed's gigabyte of dirty pages is flushed here, not in the first slice.
  await knex.raw('VACUUM ANALYZE webhook_events, webhook_attempts');
  await knex.raw('CHECKPOINT');
  return (Date.now() - started) / 1000;
}

type Answer = { on: boolean; block: number; ms: number };

/** The answers due in a slice past its guard, with the slice's purge and block. */
function answersBySlice(slices: readonly Slice[], part: PartFigures): Answer[] {
  return part.dueSamples.flatMap((due, i) => {
    const slice = slices.findIndex((s) => due >= s.startMs + GUARD_SECONDS * 1000 && due < s.endMs);
    return slice < 0
      ? []
      : [{ on: slices[slice].purge, block: Math.floor(slice / BLOCK.length), ms: part.answerSamples[i] }];
  });
}

/** A 95 % interval of the pooled p99 ratio from resampling whole blocks (a fixed-seed generator: the same run gives the same interval). */
function blockInterval(byBlock: ReadonlyMap<number, Answer[]>): [number, number] {
  const ids = [...byBlock.keys()];
  const p99 = (blocks: number[], on: boolean) =>
    quantiles(
      blocks.flatMap((b) =>
        byBlock
          .get(b)!
          .filter((a) => a.on === on)
          .map((a) => a.ms),
      ),
    ).p99;
  const ratioOver = (blocks: number[]) => p99(blocks, true) / p99(blocks, false);
  let state = 0x9e3779b9;
  const random = () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0) / 2 ** 32;
  const ratios = Array.from({ length: RESAMPLES }, () =>
    ratioOver(ids.map(() => ids[Math.floor(random() * ids.length)])),
  )
    .filter(Number.isFinite)
    .sort((a, b) => a - b);
  return [ratios[Math.floor(ratios.length * 0.025)], ratios[Math.ceil(ratios.length * 0.975) - 1]];
}

/** Per block of slices: its purged rows, the p50 and p99 of its slices without and with the purge, and each process's share of a core. */
function timeline(slices: readonly Slice[], byBlock: ReadonlyMap<number, Answer[]>, roles: readonly string[]): string {
  const cells = (answers: Answer[], on: boolean) => {
    const q = quantiles(answers.filter((a) => a.on === on).map((a) => a.ms));
    return Number.isNaN(q.p50) ? '–' : `${q.p50.toFixed(0)} / ${q.p99.toFixed(0)}`;
  };
  return table(
    [
      'block',
      '>from s',
      '>rows purged',
      '>p50 / p99 ms without',
      '>p50 / p99 ms with',
      ...roles.map((r) => `>CPU ${r}`),
    ],
    [...byBlock].map(([b, answers]) => {
      const [first, last] = [slices[b * BLOCK.length], slices[Math.min(slices.length, (b + 1) * BLOCK.length) - 1]];
      const share = (i: number) =>
        `${Math.round((100_000 * (last.cpu[1][i] - first.cpu[0][i])) / (last.endMs - first.startMs))} %`;
      return [
        b + 1,
        ((first.startMs - slices[0].startMs) / 1000).toFixed(0),
        slices
          .slice(b * BLOCK.length, (b + 1) * BLOCK.length)
          .reduce((n, s) => n + s.purged, 0)
          .toLocaleString('en'),
        cells(answers, false),
        cells(answers, true),
        ...roles.map((_, i) => share(i)),
      ];
    }),
  );
}

function report(
  temporal: string,
  seedSeconds: number,
  slices: readonly Slice[],
  part: PartFigures,
  record: { bodiesRemoved: number; rowsDeleted: number },
  left: { n: number; bodies: number; runs: number },
  roles: readonly string[],
): string {
  const answers = answersBySlice(slices, part);
  const byBlock = new Map<number, Answer[]>();
  for (const a of answers) (byBlock.get(a.block) ?? byBlock.set(a.block, []).get(a.block)!).push(a);
  const of = (on: boolean, parity?: number) =>
    answers.filter((a) => a.on === on && (parity === undefined || a.block % 2 === parity)).map((a) => a.ms);
  const ratio = quantiles(of(true)).p99 / quantiles(of(false)).p99;
  const [low, high] = blockInterval(byBlock);
  const control = quantiles(of(false, 1)).p99 / quantiles(of(false, 0)).p99;
  const refused = [...part.refused.values()].reduce((a, b) => a + b, 0);
  const onSeconds = slices.filter((s) => s.purge).reduce((n, s) => n + (s.endMs - s.startMs) / 1000, 0);
  const streamSeconds = (slices.at(-1)!.endMs - slices[0].startMs) / 1000;
  const [ms, n] = [(v: number) => v.toFixed(1), (v: number) => v.toLocaleString('en')];
  const finished = left.n === ROWS / 2 && left.bodies === 0 && left.runs === 1;
  return [
    `${n(ROWS)} finished webhooks seeded in ${seedSeconds.toFixed(0)} s (INSERT … SELECT generate_series, VACUUM ANALYZE, CHECKPOINT), each with the candidate/new body (${Buffer.byteLength(envelopeBody(EVENT))} bytes) and one attempt: half ${LOG_DAYS + 10} days old (past WEBHOOK_LOG_RETENTION_DAYS=${LOG_DAYS}: row and attempt deleted), half ${PAYLOAD_DAYS + 10} days old (past WEBHOOK_PAYLOAD_RETENTION_DAYS=${PAYLOAD_DAYS}: body and excerpt removed). ` +
      `\`partner-service api\` and one \`worker\` on a dev server (${temporal}) whose SQLite file (WAL, synchronous=normal) is on tmpfs, so that its writes do not share this machine's one disk with PostgreSQL, as a deployment's own Temporal cluster does not (its in-memory store was not used: its CPU climbs with every run it keeps, and with it the latency of every start). ` +
      `One open-loop stream of POSTs at a steady ${PER_SECOND}/s through the internal API for ${streamSeconds.toFixed(0)} s, while the purge is switched on and off in slices of ${SLICE_SECONDS} s, in blocks of four (off, on, on, off) so that a drift of the machine falls on both alike, until it has purged every seeded row; then slices without it until there are as many. ` +
      `In a slice with the purge, the bench runs the worker's own purge activity (\`purgeDueWebhooks\`, through the SDK's MockActivityEnvironment: the statements, batches of ${RETENTION_BATCH_SIZE} and pause of ${RETENTION_PAUSE_RATIO}× each batch's time that the schedule's run uses) with the slice's end as its budget. ` +
      `Each POST counts in the slice it was due in, from when it was due to its answer; the first ${GUARD_SECONDS} s of every slice is not counted, so that neither side inherits the other's last second.`,
    '',
    table(
      ['slices', '>count', '>POSTs counted', '>p50 ms', '>p95 ms', '>p99 ms', '>max ms'],
      (
        [
          ['without the purge', false],
          ['with the purge', true],
        ] as const
      ).map(([name, on]) => {
        const [q, all] = [quantiles(of(on)), of(on)];
        return [
          name,
          slices.filter((s) => s.purge === on).length,
          n(all.length),
          ms(q.p50),
          ms(q.p95),
          ms(q.p99),
          ms(Math.max(...all)),
        ];
      }),
    ),
    '',
    `Ingestion p99 with the purge ÷ without it: **${ratio.toFixed(2)}** (goal ≤ ${GOAL_RATIO} over the whole purge with no POST refused; ${refused} refused${refused ? ` (${[...part.refused].map(([answer, k]) => `${k} × ${answer}`).join(', ')})` : ''}${finished ? '' : `; the purge did not finish within ${MAX_SLICES} slices`}: ${verdict(ratio <= GOAL_RATIO && refused === 0 && finished)}). ` +
      `95 % interval from resampling the ${byBlock.size} blocks: ${low.toFixed(2)}–${high.toFixed(2)}. Control: the slices without the purge in odd blocks ÷ those in even blocks, ${control.toFixed(2)} (what the machine's own swings give).`,
    '',
    table(
      ['>rows deleted', '>bodies removed', '>seconds switched on', '>rows per second switched on'],
      [
        [
          n(record.rowsDeleted),
          n(record.bodiesRemoved),
          onSeconds.toFixed(0),
          n(Math.round((record.rowsDeleted + record.bodiesRemoved) / onSeconds)),
        ],
      ],
    ),
    '',
    'The stream block by block (a block is four slices, 40 s; CPU as a share of one core, of the 2 this machine has):',
    '',
    timeline(slices, byBlock, roles),
    '',
    `Every accepted POST was delivered (${n(part.accepted)} accepted, ${part.missing} missing, ${part.surplus} delivered twice). The counts are the run's \`retention_runs\` record. Left afterwards: ${n(left.n)} seeded rows, ${left.bodies} with a body (expected ${n(ROWS / 2)} and 0); retention runs recorded: ${left.runs} (expected 1, this one: the worker's schedule was paused).`,
  ].join('\n');
}
