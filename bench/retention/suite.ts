import { Client, Connection } from '@temporalio/client';
import type { Knex } from 'knex';
import { envelopeBody } from '../../events/envelope';
import { retentionScheduleId } from '../../lib/retention';
import { purgeDue, retentionCutoffs, RETENTION_PAUSE_RATIO, type PurgeCounts } from '../../store/retention-purge';
import { withCleanups } from '../harness/cleanups';
import { startPartnerServer } from '../harness/partner';
import { table, verdict } from '../harness/render';
import { quantiles } from '../harness/stats';
import type { BenchmarkSuite } from '../harness/suite';
import { benchTemporalBinary, temporalVersion } from '../harness/temporal';
import { EVENT, runPart, startServiceRig, waitForHealthz, waitUntil, WARMUP_WEBHOOKS, type PartFigures } from '../harness/webhook-part';

/** Expired rows seeded (BENCH_RETENTION_ROWS); ingestion at PER_SECOND; windows of WINDOW_SECONDS in PAIRS; the p99 goal; the default policy's days. */
const [ROWS, PER_SECOND, WINDOW_SECONDS, PAIRS, GOAL_RATIO, PAYLOAD_DAYS, LOG_DAYS] = [Number(process.env.BENCH_RETENTION_ROWS ?? 1_000_000), 50, 40, 3, 1.2, 30, 90];
type RunRow = { started_at: Date; finished_at: Date | null; bodies_removed: number; rows_deleted: number };
type Window = { purge: boolean; part: PartFigures; purged?: PurgeCounts };

/**
 * ROWS expired webhooks seeded, then POSTs at a steady 50/s through the API in windows that alternate without
 * and with the purge, so that a drift of the machine falls on both alike; then the scheduled purge in the worker
 * removes the rest, beside one more window of ingestion.
 */
export const retentionSuite: BenchmarkSuite = {
  name: 'retention',
  title: 'Retention purge beside ingestion (1,000,000 expired rows)',
  run: ({ databaseUrl, knex, progress }) => withCleanups('retention', progress, async (cleanups) => {
    const [executable, partner, queue] = [benchTemporalBinary(), await startPartnerServer().then((p) => (cleanups.push(() => p.close()), p)), `bench-retention-${Date.now().toString(36)}`];
    // The dev server's state in memory: its SQLite writes would share this machine's one disk with PostgreSQL's purge, which a deployment's own Temporal cluster does not.
    const { server, spawnWorker, rigWith } = await startServiceRig({ databaseUrl, knex, partner, executable, cleanups, progress, env: { TEMPORAL_TASK_QUEUE: queue }, temporalInMemory: true });
    const rig = rigWith([await spawnWorker()]);
    await waitForHealthz(rig, 'the API', rig.apiUrl, 30_000).then(() => runPart(rig, { prefix: `warm-${queue}`, count: WARMUP_WEBHOOKS, failFirst: false }));
    progress(`retention: seeding ${ROWS} expired webhooks with one attempt each`);
    const seedSeconds = await seed(knex);
    const window = (name: string) => runPart(rig, { prefix: `${name}-${queue}`, count: PER_SECOND * WINDOW_SECONDS, failFirst: false, perSecond: PER_SECOND });
    const [cutoffs, windows] = [retentionCutoffs(new Date(), { payloadDays: PAYLOAD_DAYS, logDays: LOG_DAYS, auditDays: 365 }), [] as Window[]];
    for (let pair = 1; pair <= PAIRS; pair++) {
      progress(`retention: pair ${pair} of ${PAIRS}`);
      windows.push({ purge: false, part: await window(`without-${pair}`) });
      // The purge's own batches and pauses, stopped at the window's end: its statements are the scheduled run's.
      const [part, purged] = await Promise.all([window(`with-${pair}`), purgeDue(knex, cutoffs, new Date(), { untilMs: performance.now() + WINDOW_SECONDS * 1000 })]);
      windows.push({ purge: true, part, purged });
    }
    const connection = await Connection.connect({ address: server.address }).then((c) => (cleanups.push(() => c.close()), c));
    await new Client({ connection }).schedule.getHandle(retentionScheduleId(queue)).trigger();
    const run = (): Promise<RunRow | undefined> => knex('retention_runs').orderBy('id', 'desc').first('started_at', 'finished_at', 'bodies_removed', 'rows_deleted');
    const until = async (what: string, ms: number, done: (r?: RunRow) => boolean) => { if (!(await waitUntil(rig, what, ms, async () => done(await run())))) throw new Error(`${what}: timed out`); };
    await until('the scheduled retention run starts', 60_000, (r) => Boolean(r));
    progress('retention: the scheduled run, beside one more window');
    const scheduledWindow = await window('scheduled');
    await until('the scheduled retention run finishes', 3_600_000, (r) => Boolean(r?.finished_at));
    const [left] = (await knex.raw(`SELECT count(*)::int AS n, count(*) FILTER (WHERE payload_removed_at IS NULL)::int AS bodies FROM webhook_events WHERE event_id LIKE 'seed-%'`)).rows;
    return report(temporalVersion(executable), seedSeconds, windows, scheduledWindow, (await run())!, left);
  }),
};

/** ROWS finished webhooks with the example body and one attempt each: even ones past the log retention, odd ones past the payload retention only. */
async function seed(knex: Knex): Promise<number> {
  const started = Date.now();
  await knex.raw(`DELETE FROM webhook_events WHERE event_id LIKE 'seed-%'; TRUNCATE retention_runs`);
  await knex.raw(`INSERT INTO webhook_events (id, event_id, event_type, action, company_id, body, workflow_id, run_id, status, start_reported, accepted_at, created_at, finished_at)
     SELECT gen_random_uuid(), 'seed-' || g, 'candidate', 'new', 'bench-retention', ?::json, 'wf-seed-' || g, 'run-seed', 'delivered', true, t, t, t FROM generate_series(1, ?::int) g,
       LATERAL (SELECT now() - (CASE WHEN g % 2 = 0 THEN ?::int ELSE ?::int END) * interval '1 day' - g * interval '1 second' AS t) at`, [envelopeBody(EVENT), ROWS, LOG_DAYS + 10, PAYLOAD_DAYS + 10]);
  await knex.raw(`INSERT INTO webhook_attempts (webhook_id, attempt, scheduled_at, started_at, duration_ms, http_status, succeeded, response_body)
     SELECT id, 1, finished_at, finished_at, 20, 200, true, '{"received":true}' FROM webhook_events WHERE event_id LIKE 'seed-%'`);
  // The seed's gigabyte of dirty pages is flushed here, not in the first window.
  await knex.raw('VACUUM ANALYZE webhook_events, webhook_attempts');
  await knex.raw('CHECKPOINT');
  return (Date.now() - started) / 1000;
}

function report(temporal: string, seedSeconds: number, windows: Window[], scheduled: PartFigures, purge: RunRow, left: { n: number; bodies: number }): string {
  const pooled = (purge: boolean) => quantiles(windows.filter((w) => w.purge === purge).flatMap((w) => w.part.answerSamples));
  const [without, withPurge] = [pooled(false), pooled(true)];
  const refused = [...windows.map((w) => w.part), scheduled].reduce((n, p) => n + [...p.refused.values()].reduce((a, b) => a + b, 0), 0);
  const scheduledRatio = scheduled.answerMs.p99 / without.p99;
  const [ratio, removed, deleted, seconds] = [withPurge.p99 / without.p99, Number(purge.bodies_removed), Number(purge.rows_deleted), (purge.finished_at!.getTime() - purge.started_at.getTime()) / 1000];
  const purgedInWindows = windows.reduce((n, w) => n + (w.purged ? w.purged.bodiesRemoved + w.purged.rowsDeleted : 0), 0);
  const [ms, n] = [(v: number) => v.toFixed(1), (v: number) => v.toLocaleString('en')];
  const row = (name: string, p: PartFigures, purged?: PurgeCounts) => [name, p.count, p.accepted, [...p.refused].map(([answer, k]) => `${k} × ${answer}`).join(', ') || '0',
    ...[p.answerMs.p50, p.answerMs.p95, p.answerMs.p99, p.latencyMs.p99].map(ms), purged ? n(purged.rowsDeleted + purged.bodiesRemoved) : '–'];
  return [
    `${ROWS.toLocaleString('en')} finished webhooks seeded in ${seedSeconds.toFixed(0)} s (INSERT … SELECT generate_series, VACUUM ANALYZE, CHECKPOINT), each with the candidate/new body (${Buffer.byteLength(envelopeBody(EVENT))} bytes) and one attempt: half ${LOG_DAYS + 10} days old (past WEBHOOK_LOG_RETENTION_DAYS=${LOG_DAYS}: row and attempt deleted), half ${PAYLOAD_DAYS + 10} days old (past WEBHOOK_PAYLOAD_RETENTION_DAYS=${PAYLOAD_DAYS}: body and excerpt removed). ` +
      `\`partner-service api\` and one \`worker\` on a dev server (${temporal}) whose state is in memory, so that its SQLite writes do not share this machine's one disk with PostgreSQL (a deployment's Temporal cluster keeps its own); POSTs at a steady ${PER_SECOND}/s (open loop) through the internal API in ${PAIRS * 2} windows of ${WINDOW_SECONDS} s that alternate without and with the purge, so that a drift of the machine falls on both alike. ` +
      `In a window with the purge, the bench process runs the purge's own batches (\`purgeDue\`: the scheduled run's statements, batch size and pause of ${RETENTION_PAUSE_RATIO}× each batch's time) and stops them at the window's end; afterwards the schedule's run in the worker removes the rest, beside one more window.`,
    '', table(['window', '>POSTs', '>accepted', 'refused', '>POST→answer p50 ms', '>p95 ms', '>p99 ms', '>202→partner p99 ms', '>rows purged in it'],
      [...windows.map((w, i) => row(`${w.purge ? 'purge' : 'no purge'} (${Math.floor(i / 2) + 1})`, w.part, w.purged)), row('scheduled run in the worker', scheduled)]), '',
    table(['all windows', '>POSTs', '>p50 ms', '>p95 ms', '>p99 ms'], [['no purge', without] as const, ['purge', withPurge] as const].map(([name, q]) => [name, PAIRS * PER_SECOND * WINDOW_SECONDS, ms(q.p50), ms(q.p95), ms(q.p99)])), '',
    `POST→answer counts from when each POST was due, refused ones included. Ingestion p99 with the purge, over its ${PAIRS} windows: ${ratio.toFixed(2)} × without; beside the scheduled run in the worker: ${scheduledRatio.toFixed(2)} × without ` +
      `(goal: both ≤ ${GOAL_RATIO} × with no POST refused: ${verdict(ratio <= GOAL_RATIO && scheduledRatio <= GOAL_RATIO && refused === 0)}). ` +
      `The purge removed ${Math.round(purgedInWindows / (PAIRS * WINDOW_SECONDS)).toLocaleString('en')} rows per second in its windows.`,
    '', table(['scheduled run: rows deleted', '>bodies removed', '>seconds', '>rows per second'], [[deleted, removed, seconds.toFixed(1), Math.round((deleted + removed) / seconds)].map((v) => v.toLocaleString('en'))]), '',
    `The scheduled run's figures come from its \`retention_runs\` record. Left afterwards: ${left.n.toLocaleString('en')} seeded rows, ${left.bodies} with a body (expected ${(ROWS / 2).toLocaleString('en')} and 0).`,
  ].join('\n');
}
