import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import type { Knex } from 'knex';
import pg from 'pg';
import { Client } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { dataAtRest } from '../../lib/at-rest';
import { loadConfig } from '../../lib/config';
import { createLogger } from '../../lib/logger';
import { createTemporalGateway } from '../../temporal/gateway';
import { dataConverterFor } from '../../temporal/settings';
import { ensureSearchAttributes } from '../../temporal/register-search-attributes';
import { parseRecoveryBody, startRecovery } from '../../application/webhooks/recoveries';
import { runRecoveryBatch } from '../../application/webhooks/recovery-batches';
import { redeliverMatching } from '../../application/webhooks/webhook-operations';
import { table, verdict } from '../harness/render';
import { benchTemporalBinary, startBenchTemporal } from '../harness/temporal';
import type { BenchmarkSuite } from '../harness/suite';

const WEBHOOKS = 10_000;
/** Ordering keys: each lane holds WEBHOOKS / LANES failed originals, so every batch places redeliveries in lanes. */
const LANES = 1_000;
const COMPANY = 'bench-recovery';
const GOAL_MS = 5_000;

/** PostgreSQL's own time in this database so far (ms): backends flush it when idle, within 10 s. */
const activeMs = async (knex: Knex) =>
  Number(
    (await knex.raw('SELECT active_time FROM pg_stat_database WHERE datname = current_database()')).rows[0].active_time,
  );

/**
 * PostgreSQL's time for `work` (`pg_stat_database.active_time`: time its backends spent executing statements in this
 * database, which only this process uses) and the statements sent meanwhile (every pg client query, as knex and
 * db/sql.ts both send them), and the wall time.
 */
async function statementTime(knex: Knex, work: () => Promise<unknown>) {
  const settle = () => new Promise((resolve) => setTimeout(resolve, 11_000));
  await settle();
  const before = await activeMs(knex);
  const query = pg.Client.prototype.query;
  let statements = 0;
  pg.Client.prototype.query = function counted(this: pg.Client, ...args: unknown[]) {
    statements++;
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  const wallAt = performance.now();
  try {
    await work();
  } finally {
    pg.Client.prototype.query = query;
  }
  const wallMs = performance.now() - wallAt;
  await settle();
  return { ms: (await activeMs(knex)) - before, statements, wallMs };
}

/** WEBHOOKS failed originals of COMPANY, each with its place (settled with a gap) in one of LANES lanes. */
async function seed(knex: Knex): Promise<void> {
  await knex.raw(
    `INSERT INTO ordering_lanes (key_digest, key_text, index_key_id, last_seq, gaps)
     SELECT sha256(convert_to('bench-recovery-lane-' || k, 'UTF8')), 'company:bench-' || k, 'development', ?, ?
       FROM generate_series(1, ${LANES}) AS k`,
    [WEBHOOKS / LANES, WEBHOOKS / LANES],
  );
  await knex.raw(
    `WITH created AS (
       INSERT INTO webhook_events (id, event_id, event_type, action, company_id, body, workflow_id, run_id, status,
         start_reported, finished_at, accepted_at, created_at)
       SELECT gen_random_uuid(), 'bench-recovery-' || i, 'company', 'signup', ?,
              json_build_object('event_type', 'company', 'action', 'signup', 'data',
                json_build_object('company_id', ?::text, 'internal_id', i, 'company_name', 'Bench ' || i,
                  'has_config', false, 'dt_created', '2026-11-01 10:00:00')),
              'webhook-company-signup-bench-recovery-' || i, 'run-' || i, 'failed', true, now(),
              now() - interval '1 hour' + i * interval '1 millisecond',
              now() - interval '1 hour' + i * interval '1 millisecond'
         FROM generate_series(1, ${WEBHOOKS}) AS i
       RETURNING id, event_id
     )
     INSERT INTO ordering_places (webhook_id, lane_id, seq, settled_at, gap)
     SELECT c.id, l.id, (n - 1) / ${LANES} + 1, now(), true
       FROM (SELECT id, substring(event_id FROM 16)::int AS n FROM created) c
       JOIN ordering_lanes l ON l.key_digest = sha256(convert_to('bench-recovery-lane-' || ((c.n - 1) % ${LANES} + 1),
         'UTF8'))`,
    [COMPANY, COMPANY],
  );
  await knex.raw('VACUUM ANALYZE webhook_events, ordering_places, ordering_lanes');
}

export const recoverySuite: BenchmarkSuite = {
  name: 'recovery',
  title: "A partner's recovery of 10,000 webhooks",
  async run({ knex, databaseUrl, progress }) {
    progress(`recovery: seeding ${WEBHOOKS} failed webhooks in ${LANES} lanes`);
    const since = new Date(Date.now() - 2 * 3600_000);
    await seed(knex);
    const temporal = await startBenchTemporal(benchTemporalBinary());
    // No worker polls this queue: the deliveries are started, never run, so only the redeliveries' statements count.
    const config = loadConfig({ DATABASE_URL: databaseUrl, TEMPORAL_ADDRESS: temporal.server.address });
    const idle = { ...config, TEMPORAL_TASK_QUEUE: `bench-recovery-idle-${randomUUID()}` };
    const native = await NativeConnection.connect({ address: temporal.server.address });
    const gateway = createTemporalGateway(idle, createLogger('error'));
    const [load] = loadavg();
    try {
      await ensureSearchAttributes(native, config.temporal.namespace);
      const client = new Client({ connection: native, dataConverter: dataConverterFor(config) });
      const atRest = dataAtRest(config);
      const batches = { knex, atRest, client, taskQueue: idle.TEMPORAL_TASK_QUEUE, sendTimeoutMs: 30_000 };
      const app = { appId: 'bench-app', name: 'bench', scopes: [], companyIds: [COMPANY] };
      progress('recovery: the partner recovery (its plan and row, then its batches as its workflow runs them)');
      let started = 0;
      const partner = await statementTime(knex, async () => {
        const request = parseRecoveryBody({ since: since.toISOString() });
        const { id } = await startRecovery(knex, atRest, gateway, { actor: 'app:bench-app' }, app, request);
        for (let batch = await runRecoveryBatch(batches, id); ; batch = await runRecoveryBatch(batches, id)) {
          started += batch.started;
          if (batch.ended) break;
        }
      });
      progress("recovery: the operator's bulk redelivery of the same originals");
      const filter = { status: 'failed' as const, companyId: COMPANY, since, until: new Date() };
      const options = { sendTimeoutMs: 30_000, atRest, limit: WEBHOOKS, allowExpiredLinks: true };
      let bulk = 0;
      const operator = await statementTime(knex, async () => {
        bulk = (await redeliverMatching(knex, gateway, { actor: 'bench' }, filter, options)).started;
      });
      if (started !== WEBHOOKS || bulk !== WEBHOOKS) throw new Error(`started ${started} and ${bulk}, not ${WEBHOOKS}`);
      const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
      return [
        `${WEBHOOKS} failed originals of one company in ${LANES} ordering lanes, each redelivered once by a partner's ` +
          `recovery (its plan and row, then its batches of 500 as its workflow's activity runs them, called in a ` +
          "loop here), then by the operator's bulk redelivery (`redeliverMatching`) of the same originals, their " +
          "workflows started on a queue no worker polls. PostgreSQL's time: `pg_stat_database.active_time` of the " +
          "suite's database before and after (its backends' time executing statements). Load average at the start: " +
          `${load.toFixed(1)}.`,
        '',
        table(
          ['measure', ">partner's recovery", ">operator's bulk redelivery"],
          [
            ['redeliveries started', started, bulk],
            ['statements', partner.statements, operator.statements],
            ["PostgreSQL's time", s(partner.ms), s(operator.ms)],
            ['wall time (with the workflow starts)', s(partner.wallMs), s(operator.wallMs)],
            ['goal', `≤ ${s(GOAL_MS)}: ${verdict(partner.ms <= GOAL_MS)}`, 'comparison (the issue: 34.8 s)'],
          ],
        ),
      ].join('\n');
    } finally {
      await gateway.close();
      await native.close();
      await temporal.stop();
    }
  },
};
