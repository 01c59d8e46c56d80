import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Client, Connection } from '@temporalio/client';
import type { Knex } from 'knex';
import { envelopeBody } from '../../events/envelope';
import { retentionScheduleId } from '../../lib/retention';
import { RETENTION_BATCH_SIZE } from '../../store/retention-purge';
import { withCleanups } from '../harness/cleanups';
import { startPartnerServer } from '../harness/partner';
import { table, verdict } from '../harness/render';
import type { BenchmarkSuite } from '../harness/suite';
import { benchTemporalBinary, temporalVersion } from '../harness/temporal';
import { EVENT, runPart, startServiceRig, waitForHealthz, waitUntil, WARMUP_WEBHOOKS, type PartFigures } from '../harness/webhook-part';

/** Expired rows seeded (BENCH_RETENTION_ROWS): half past the log retention, half past the payload retention only. */
const ROWS = Number(process.env.BENCH_RETENTION_ROWS ?? 1_000_000);
/** The steady ingestion of both windows, and each window's length. */
const PER_SECOND = 50;
const WINDOW_SECONDS = 60;
/** The goal: ingestion's p99 with the purge running at most this many times its p99 without. */
const GOAL_RATIO = 1.2;
/** The service's default policy, which the seed's ages are set against. */
const [PAYLOAD_DAYS, LOG_DAYS] = [30, 90];

/**
 * The retention purge beside live ingestion: ROWS expired webhooks (with one attempt each) seeded into the
 * delivery log, then webhooks POSTed at a steady 50/s through the real API for a fixed window, first without a
 * purge, then with the scheduled purge running in the worker (the schedule triggered at the window's start).
 */
export const retentionSuite: BenchmarkSuite = {
  name: 'retention',
  title: 'Retention purge beside ingestion (1,000,000 expired rows)',
  run: ({ databaseUrl, knex, progress }) =>
    withCleanups('retention', progress, async (cleanups) => {
      const executable = benchTemporalBinary();
      const partner = await startPartnerServer();
      cleanups.push(() => partner.close());
      const taskQueue = `bench-retention-${randomUUID().slice(0, 8)}`;
      const { server, spawnWorker, rigWith } = await startServiceRig({ databaseUrl, knex, partner, executable, cleanups, progress, env: { TEMPORAL_TASK_QUEUE: taskQueue } });
      const rig = rigWith([await spawnWorker()]);
      await waitForHealthz(rig, 'the API', rig.apiUrl, 30_000);
      const tag = Date.now().toString(36);
      progress(`retention: warm-up, ${WARMUP_WEBHOOKS} webhooks`);
      await runPart(rig, { prefix: `warm-${tag}`, count: WARMUP_WEBHOOKS, failFirst: false });

      progress(`retention: seeding ${ROWS} expired webhooks with one attempt each`);
      const seedSeconds = await seed(knex);
      const count = PER_SECOND * WINDOW_SECONDS;

      progress(`retention: without a purge, ${count} webhooks at ${PER_SECOND}/s`);
      const without = await runPart(rig, { prefix: `without-${tag}`, count, failFirst: false, perSecond: PER_SECOND });

      progress('retention: with the purge, triggered through its schedule');
      const connection = await Connection.connect({ address: server.address });
      cleanups.push(() => connection.close());
      await new Client({ connection }).schedule.getHandle(retentionScheduleId(taskQueue)).trigger();
      const run = () => knex('retention_runs').orderBy('id', 'desc').first('started_at', 'finished_at', 'bodies_removed', 'rows_deleted');
      if (!(await waitUntil(rig, 'the retention run to start', 60_000, async () => Boolean(await run())))) throw new Error('the scheduled retention run did not start');
      const withPurge = await runPart(rig, { prefix: `with-${tag}`, count, failFirst: false, perSecond: PER_SECOND });
      const atWindowEnd = await run();
      const windowEndedAt = new Date();
      progress('retention: waiting for the purge to finish');
      if (!(await waitUntil(rig, 'the retention run to finish', 3_600_000, async () => Boolean((await run())?.finished_at)))) throw new Error('the retention run did not finish');
      const purge = await run();
      const left = await knex.raw(`SELECT count(*) FILTER (WHERE event_id LIKE 'seed-%')::int AS rows,
        count(*) FILTER (WHERE event_id LIKE 'seed-%' AND payload_removed_at IS NULL)::int AS bodies FROM webhook_events`);
      return report({
        temporal: temporalVersion(executable),
        seedSeconds,
        without,
        withPurge,
        purge,
        duringWindow: atWindowEnd,
        purgeCoveredWindow: !atWindowEnd.finished_at || atWindowEnd.finished_at >= windowEndedAt,
        left: left.rows[0] as { rows: number; bodies: number },
      });
    }),
};

/** ROWS finished webhooks with the example event's body and one 2XX attempt each, in one INSERT … SELECT per table. */
async function seed(knex: Knex): Promise<number> {
  const started = performance.now();
  await knex.raw('TRUNCATE retention_runs');
  await knex.raw(`DELETE FROM webhook_events WHERE event_id LIKE 'seed-%'`);
  // Even rows finished past the log retention (deleted), odd ones past the payload retention only (bodies removed).
  await knex.raw(
    `INSERT INTO webhook_events (id, event_id, event_type, action, company_id, body, workflow_id, run_id, status, start_reported, accepted_at, created_at, finished_at)
     SELECT gen_random_uuid(), 'seed-' || g, 'candidate', 'new', 'bench-retention', ?::json, 'wf-seed-' || g, 'run-seed', 'delivered', true, t, t, t
       FROM generate_series(1, ?::int) g,
            LATERAL (SELECT now() - (CASE WHEN g % 2 = 0 THEN ?::int ELSE ?::int END) * interval '1 day' - g * interval '1 second' AS t) at`,
    [envelopeBody(EVENT), ROWS, LOG_DAYS + 10, PAYLOAD_DAYS + 10],
  );
  await knex.raw(
    `INSERT INTO webhook_attempts (webhook_id, attempt, scheduled_at, started_at, duration_ms, http_status, succeeded, response_body)
     SELECT id, 1, finished_at, finished_at, 20, 200, true, '{"received":true}' FROM webhook_events WHERE event_id LIKE 'seed-%'`,
  );
  await knex.raw('VACUUM ANALYZE webhook_events, webhook_attempts');
  return (performance.now() - started) / 1000;
}

interface RunRow {
  started_at: Date;
  finished_at: Date | null;
  bodies_removed: number | string;
  rows_deleted: number | string;
}

const ms = (value: number) => value.toFixed(1);

function windowRow(name: string, part: PartFigures): Array<string | number> {
  const refused = [...part.refused].map(([answer, n]) => `${n} × ${answer}`).join(', ') || '0';
  return [name, part.count, part.accepted, refused, part.accepted - part.deliveredRows, ms(part.answerMs.p50), ms(part.answerMs.p95), ms(part.answerMs.p99), ms(part.latencyMs.p99)];
}

function report(o: {
  temporal: string;
  seedSeconds: number;
  without: PartFigures;
  withPurge: PartFigures;
  purge: RunRow;
  duringWindow: RunRow;
  purgeCoveredWindow: boolean;
  left: { rows: number; bodies: number };
}): string {
  const ratio = o.withPurge.answerMs.p99 / o.without.answerMs.p99;
  const removed = Number(o.purge.bodies_removed);
  const deleted = Number(o.purge.rows_deleted);
  const purgeSeconds = (o.purge.finished_at!.getTime() - o.purge.started_at.getTime()) / 1000;
  const windowDone = Number(o.duringWindow.bodies_removed) + Number(o.duringWindow.rows_deleted);
  return [
    `${ROWS.toLocaleString('en')} finished webhooks seeded (${(o.seedSeconds).toFixed(0)} s, INSERT … SELECT generate_series, then VACUUM ANALYZE), ` +
      `each with the example candidate/new body (${Buffer.byteLength(envelopeBody(EVENT))} bytes) and one attempt: half finished ` +
      `${LOG_DAYS + 10} days ago (past WEBHOOK_LOG_RETENTION_DAYS=${LOG_DAYS}: the row and its attempt are deleted), half ` +
      `${PAYLOAD_DAYS + 10} days ago (past WEBHOOK_PAYLOAD_RETENTION_DAYS=${PAYLOAD_DAYS}: the body and excerpt are removed). ` +
      `\`partner-service api\` and one \`partner-service worker\` on a dev server (${o.temporal}); webhooks POSTed at a steady ` +
      `${PER_SECOND}/s (open loop) for ${WINDOW_SECONDS} s through the internal API, first with no purge, then with the purge ` +
      `running: the schedule \`webhook-retention-<queue>\` triggered at the window's start, its activities in the worker, ` +
      `${RETENTION_BATCH_SIZE.toLocaleString('en')} rows per statement.`,
    '',
    '### Ingestion with and without the purge',
    '',
    table(['window', '>POSTs', '>accepted', 'refused', '>not delivered', '>POST→answer p50 ms', '>p95 ms', '>p99 ms', '>202→partner p99 ms'], [windowRow('no purge', o.without), windowRow('purge running', o.withPurge)]),
    '',
    `POST→answer counts from when each POST was due (open loop), refused ones included. ` +
      `p99 of ingestion with the purge running: ${ratio.toFixed(2)} × without (goal ≤ ${GOAL_RATIO} ×: ${verdict(ratio <= GOAL_RATIO)}). ` +
      (o.purgeCoveredWindow
        ? `The purge ran through the whole window (${windowDone.toLocaleString('en')} rows done by its end).`
        : `The purge finished before the window ended (${windowDone.toLocaleString('en')} rows): part of the window ran without it.`),
    '',
    '### The purge',
    '',
    table(['>rows deleted', '>bodies removed', '>seconds', '>rows per second'], [[deleted.toLocaleString('en'), removed.toLocaleString('en'), purgeSeconds.toFixed(1), Math.round((deleted + removed) / purgeSeconds).toLocaleString('en')]]),
    '',
    `Left after the run: ${o.left.rows.toLocaleString('en')} seeded rows, ${o.left.bodies.toLocaleString('en')} of them with a body ` +
      `(expected ${(ROWS / 2).toLocaleString('en')} and 0). Rows per second counts both kinds, from the run's record in \`retention_runs\`.`,
  ].join('\n');
}
