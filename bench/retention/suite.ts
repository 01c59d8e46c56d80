import { Client, Connection } from '@temporalio/client';
import type { Knex } from 'knex';
import { envelopeBody } from '../../events/envelope';
import { retentionScheduleId } from '../../lib/retention';
import { withCleanups } from '../harness/cleanups';
import { startPartnerServer } from '../harness/partner';
import { table, verdict } from '../harness/render';
import type { BenchmarkSuite } from '../harness/suite';
import { benchTemporalBinary, temporalVersion } from '../harness/temporal';
import { EVENT, runPart, startServiceRig, waitForHealthz, waitUntil, WARMUP_WEBHOOKS, type PartFigures } from '../harness/webhook-part';

/** Expired rows seeded (BENCH_RETENTION_ROWS); ingestion at PER_SECOND for WINDOW_SECONDS; the p99 goal; the default policy's days. */
const [ROWS, PER_SECOND, WINDOW_SECONDS, GOAL_RATIO, PAYLOAD_DAYS, LOG_DAYS] = [Number(process.env.BENCH_RETENTION_ROWS ?? 1_000_000), 50, 60, 1.2, 30, 90];
type RunRow = { started_at: Date; finished_at: Date | null; bodies_removed: number; rows_deleted: number };

/** ROWS expired webhooks seeded, then POSTs at a steady 50/s through the API for a fixed window, with no purge, then with the scheduled purge running in the worker. */
export const retentionSuite: BenchmarkSuite = {
  name: 'retention',
  title: 'Retention purge beside ingestion (1,000,000 expired rows)',
  run: ({ databaseUrl, knex, progress }) => withCleanups('retention', progress, async (cleanups) => {
    const [executable, partner, queue] = [benchTemporalBinary(), await startPartnerServer(), `bench-retention-${Date.now().toString(36)}`];
    cleanups.push(() => partner.close());
    const { server, spawnWorker, rigWith } = await startServiceRig({ databaseUrl, knex, partner, executable, cleanups, progress, env: { TEMPORAL_TASK_QUEUE: queue } });
    const rig = rigWith([await spawnWorker()]);
    await waitForHealthz(rig, 'the API', rig.apiUrl, 30_000);
    await runPart(rig, { prefix: `warm-${queue}`, count: WARMUP_WEBHOOKS, failFirst: false });
    progress(`retention: seeding ${ROWS} expired webhooks with one attempt each`);
    const seedSeconds = await seed(knex);
    const window = (name: string) => runPart(rig, { prefix: `${name}-${queue}`, count: PER_SECOND * WINDOW_SECONDS, failFirst: false, perSecond: PER_SECOND });
    const without = await window('without');
    const connection = await Connection.connect({ address: server.address });
    cleanups.push(() => connection.close());
    await new Client({ connection }).schedule.getHandle(retentionScheduleId(queue)).trigger();
    const run = (): Promise<RunRow | undefined> => knex('retention_runs').orderBy('id', 'desc').first('started_at', 'finished_at', 'bodies_removed', 'rows_deleted');
    const until = async (what: string, ms: number, done: (r?: RunRow) => boolean) => { if (!(await waitUntil(rig, what, ms, async () => done(await run())))) throw new Error(`${what}: timed out`); };
    await until('the retention run starts', 60_000, (r) => Boolean(r));
    progress('retention: the window with the purge running');
    const withPurge = await window('with');
    const [atEnd, endedAt] = [(await run())!, new Date()];
    await until('the retention run finishes', 3_600_000, (r) => Boolean(r?.finished_at));
    const [left] = (await knex.raw(`SELECT count(*)::int AS n, count(*) FILTER (WHERE payload_removed_at IS NULL)::int AS bodies FROM webhook_events WHERE event_id LIKE 'seed-%'`)).rows;
    return report(temporalVersion(executable), seedSeconds, [without, withPurge], (await run())!, !atEnd.finished_at || atEnd.finished_at >= endedAt, left);
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
  // The seed's gigabyte of dirty pages is flushed here, not in the window without the purge.
  await knex.raw('VACUUM ANALYZE webhook_events, webhook_attempts');
  await knex.raw('CHECKPOINT');
  return (Date.now() - started) / 1000;
}

function report(temporal: string, seedSeconds: number, [without, withPurge]: PartFigures[], purge: RunRow, covered: boolean, left: { n: number; bodies: number }): string {
  const [ratio, removed, deleted, seconds] = [withPurge.answerMs.p99 / without.answerMs.p99, Number(purge.bodies_removed), Number(purge.rows_deleted), (purge.finished_at!.getTime() - purge.started_at.getTime()) / 1000];
  const row = (name: string, p: PartFigures) => [name, p.count, p.accepted, [...p.refused].map(([answer, n]) => `${n} × ${answer}`).join(', ') || '0', ...[p.answerMs.p50, p.answerMs.p95, p.answerMs.p99, p.latencyMs.p99].map((v) => v.toFixed(1))];
  return [
    `${ROWS.toLocaleString('en')} finished webhooks seeded in ${seedSeconds.toFixed(0)} s (INSERT … SELECT generate_series, VACUUM ANALYZE), each with the candidate/new body (${Buffer.byteLength(envelopeBody(EVENT))} bytes) and one attempt: half ${LOG_DAYS + 10} days old (past WEBHOOK_LOG_RETENTION_DAYS=${LOG_DAYS}: row and attempt deleted), half ${PAYLOAD_DAYS + 10} days old (past WEBHOOK_PAYLOAD_RETENTION_DAYS=${PAYLOAD_DAYS}: body and excerpt removed). ` +
      `\`partner-service api\` and one \`worker\` on a dev server (${temporal}); POSTs at a steady ${PER_SECOND}/s (open loop) for ${WINDOW_SECONDS} s through the internal API, first with no purge, then with the purge running (its schedule triggered at the window's start, its activities in the worker, a pause after each batch nine times as long as the batch).`,
    '', table(['window', '>POSTs', '>accepted', 'refused', '>POST→answer p50 ms', '>p95 ms', '>p99 ms', '>202→partner p99 ms'], [row('no purge', without), row('purge running', withPurge)]), '',
    `POST→answer counts from when each POST was due, refused ones included. Ingestion p99 with the purge running: ${ratio.toFixed(2)} × without (goal ≤ ${GOAL_RATIO} × with no POST refused: ${verdict(ratio <= GOAL_RATIO && !without.refused.size && !withPurge.refused.size)}); ${covered ? 'the purge ran through the whole window' : '**the purge finished before the window ended**'}.`,
    '', table(['>rows deleted', '>bodies removed', '>seconds', '>rows per second'], [[deleted, removed, seconds.toFixed(1), Math.round((deleted + removed) / seconds)].map((v) => v.toLocaleString('en'))]), '',
    `The purge's figures come from its \`retention_runs\` record. Left afterwards: ${left.n.toLocaleString('en')} seeded rows, ${left.bodies} with a body (expected ${(ROWS / 2).toLocaleString('en')} and 0).`,
  ].join('\n');
}
