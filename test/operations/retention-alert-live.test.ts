// The personal-data alerts on a real Prometheus (as prometheus-live.test.ts) scraping `partner-service api`
// and `partner-service worker` with one day of payload retention. WebhookBodiesPastRetention: silent while no
// body is past it, firing within seconds of a finished webhook whose body is 3 days old, and resolved once
// `partner-service retention run` has removed it. ErasureOverdue: silent for an erasure pending 14 minutes,
// firing for one pending 20 minutes (whose `erase status` says why), resolved once it completes.
// OrderingKeyBlocked: silent for a head blocked 20 minutes, firing for one blocked 31, resolved once settled.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { findFreePort } from '../../lib/ports';
import type { DevServer } from '../../temporal/dev-server';
import { runCli } from '../support/cli';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { eventually } from '../support/eventually';
import { startPrometheus, type PrometheusServer } from '../support/prometheus';
import { serviceProcesses } from '../support/service-processes';
import { startTestDevServer, tempDir } from '../support/temporal';
import { startPartnerServer, type PartnerServer } from '../support/partner-server';

const RULES = path.join(__dirname, '..', '..', 'deploy', 'prometheus', 'partner-alerts.yml');
const TASK_QUEUE = 'retention-alert';
const DAY_SECONDS = 86_400;

describe('WebhookBodiesPastRetention, ErasureOverdue and OrderingKeyBlocked on a real Prometheus scraping api and worker processes', function () {
  this.timeout(180_000);
  let work: string;
  let server: DevServer;
  let db: TestDatabase;
  let partner: PartnerServer;
  let prometheus: PrometheusServer | undefined;
  const retention = { WEBHOOK_PAYLOAD_RETENTION_DAYS: '1', WEBHOOK_LOG_RETENTION_DAYS: '30' };
  const processes = serviceProcesses(
    () => ({
      work,
      databaseUrl: db.url,
      temporalPort: Number(server.address.split(':').pop()),
      partnerUrl: partner.url,
    }),
    retention,
  );
  const retentionAlerts = async () =>
    (await prometheus!.alerts()).filter((a) => a.labels.alertname === 'WebhookBodiesPastRetention');
  const sample = async (expr: string) => (await prometheus!.query(expr)).map((s) => s.value);

  /** What `before` started, stopped in reverse order by `after`. */
  const stops: Array<() => Promise<unknown>> = [];

  before(async () => {
    work = await tempDir('retention-alert');
    stops.push(() => rm(work, { recursive: true, force: true }));
    server = await startTestDevServer();
    stops.push(() => server.stop());
    db = await createTestDatabase();
    stops.push(() => db.drop());
    partner = await startPartnerServer((_req, res) => res.writeHead(204).end());
    stops.push(
      () => partner.close(),
      () => processes.stopAll(),
    );
    const api = new URL(await processes.startApi(TASK_QUEUE)).host;
    const workerPort = await findFreePort();
    await processes.startWorker(TASK_QUEUE, { WORKER_HTTP_PORT: String(workerPort) });
    prometheus = await startPrometheus({ work, rulesFile: RULES, targets: [api, `127.0.0.1:${workerPort}`] });
    stops.push(() => prometheus!.stop());
    await eventually(
      'both targets up and the rule evaluated',
      async () => {
        const health = Object.values(await prometheus!.targets());
        const rule = (await prometheus!.rules()).find((r) => r.name === 'WebhookBodiesPastRetention');
        return health.length === 2 && health.every((h) => h === 'up') && rule?.health === 'ok';
      },
      60_000,
    );
  });

  after(async function () {
    this.timeout(60_000);
    for (const stop of stops.reverse()) await stop();
  });

  it('stays silent with no body past retention, fires for a body 3 days old, and resolves after a purge', async () => {
    // The worker reports the policy; the API process reports both gauges at 0.
    assert.deepEqual(await sample('max(partner_service_payload_retention_seconds)'), [DAY_SECONDS]);
    assert.deepEqual(await sample('count(partner_service_payload_retention_seconds)'), [2]);
    assert.deepEqual(await sample('max(partner_service_oldest_stored_body_age_seconds)'), [0]);
    for (let i = 0; i < 5; i++) {
      assert.deepEqual(await retentionAlerts(), []);
      await new Promise((r) => setTimeout(r, 1000));
    }

    const id = randomUUID();
    const finished = new Date(Date.now() - 3 * DAY_SECONDS * 1000);
    await db.knex('webhook_events').insert({
      id,
      event_id: `alert-${id}`,
      event_type: 'candidate',
      action: 'new',
      company_id: 'acme',
      body: '{"data":{}}',
      workflow_id: `wf-${id}`,
      run_id: randomUUID(),
      status: 'delivered',
      accepted_at: finished,
      created_at: finished,
      finished_at: finished,
    });
    const insertedAt = Date.now();
    await eventually(
      'WebhookBodiesPastRetention firing',
      async () => (await retentionAlerts()).some((a) => a.state === 'firing'),
      30_000,
    );
    const [alert] = await retentionAlerts();
    console.log(
      `      firing ${((Date.now() - insertedAt) / 1000).toFixed(1)} s after the row was written, value ${alert.value}`,
    );
    assert.deepEqual(alert.labels, { alertname: 'WebhookBodiesPastRetention', severity: 'warning' });
    assert.ok(Math.abs(Number(alert.value) - 3 * DAY_SECONDS) < 120, alert.value);
    assert.match(
      alert.annotations.description,
      /^The oldest stored body of a finished webhook finished 3d 0h \d+m \d+s ago, more than WEBHOOK_PAYLOAD_RETENTION_DAYS plus a day/,
    );

    const run = await runCli(['retention', 'run'], {
      PATH: process.env.PATH,
      DATABASE_URL: db.url,
      TEMPORAL_TASK_QUEUE: TASK_QUEUE,
      ...retention,
    });
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(
      (({ bodies_removed, rows_deleted }) => ({ bodies_removed, rows_deleted }))(JSON.parse(run.stdout)),
      { bodies_removed: 1, rows_deleted: 0 },
    );
    await eventually('the alert resolved', async () => (await retentionAlerts()).length === 0, 30_000);
    assert.deepEqual(await sample('max(partner_service_oldest_stored_body_age_seconds)'), [0]);
  });

  it('ErasureOverdue: silent at 14 minutes pending, fires for an erasure pending 20 minutes, resolves once it completes', async () => {
    const erasureAlerts = async () =>
      (await prometheus!.alerts()).filter((a) => a.labels.alertname === 'ErasureOverdue');
    const insertPending = async (minutes: number) => {
      const id = randomUUID();
      await db.knex('erasures').insert({
        id,
        subject_kind: 'email',
        subject_key: 'k',
        subject_keys: ['k'],
        subject_key_ids: ['development'],
        requested_by: 'test',
        requested_at: new Date(Date.now() - minutes * 60_000),
        pending_reason:
          'waiting: Temporal still serves runs of 1 of its workflow ids (deleted; Temporal deletes asynchronously)',
      });
      return id;
    };
    await insertPending(14);
    await eventually(
      'the gauge scraped at 0',
      async () => (await sample('max(partner_service_erasures_overdue)'))[0] === 0,
      30_000,
    );
    assert.deepEqual(await erasureAlerts(), []);
    const overdue = await insertPending(20);
    await eventually(
      'ErasureOverdue firing',
      async () => (await erasureAlerts()).some((a) => a.state === 'firing'),
      30_000,
    );
    const [alert] = await erasureAlerts();
    assert.deepEqual([alert.labels, Number(alert.value)], [{ alertname: 'ErasureOverdue', severity: 'warning' }, 1]);
    assert.match(alert.annotations.description, /^1 erasures requested more than 15 min ago are not completed/);
    // What the operator reads next: the record's reason.
    const status = await runCli(['erase', 'status', overdue], { PATH: process.env.PATH, DATABASE_URL: db.url });
    assert.equal(status.code, 0, status.stderr);
    assert.match(JSON.parse(status.stdout).pending_reason, /^waiting: Temporal still serves runs/);
    await db
      .knex('erasures')
      .whereIn('id', [overdue])
      .update({ status: 'completed', completed_at: new Date(), pending_reason: null });
    await eventually('ErasureOverdue resolved', async () => (await erasureAlerts()).length === 0, 30_000);
  });

  it('OrderingKeyBlocked: silent for a head blocked 20 minutes, fires for one blocked 31 minutes, resolves once it is skipped', async () => {
    const orderingAlerts = async () =>
      (await prometheus!.alerts()).filter((a) => a.labels.alertname === 'OrderingKeyBlocked');
    const [lane] = await db
      .knex('ordering_lanes')
      .insert({ key_digest: Buffer.from(randomUUID()), key_text: `job:alert-${randomUUID()}`, last_seq: 2 })
      .returning('id');
    const blockedHead = async (seq: number, minutes: number) => {
      const id = randomUUID();
      await db.knex('webhook_events').insert({
        id,
        event_id: `blocked-${id}`,
        event_type: 'job',
        action: 'update',
        body: '{"data":{}}',
        workflow_id: `wf-${id}`,
        run_id: randomUUID(),
      });
      await db
        .knex('ordering_places')
        .insert({ webhook_id: id, lane_id: lane.id, seq, blocked_since: new Date(Date.now() - minutes * 60_000) });
      return id;
    };
    const recent = await blockedHead(1, 20);
    await eventually(
      'the gauge scraped at about 20 min',
      async () => Math.abs((await sample('max(partner_service_ordering_oldest_blocked_seconds)'))[0] - 1200) < 60,
      30_000,
    );
    assert.deepEqual(await orderingAlerts(), []);
    const old = await blockedHead(2, 31);
    await eventually(
      'OrderingKeyBlocked firing',
      async () => (await orderingAlerts()).some((a) => a.state === 'firing'),
      30_000,
    );
    const [alert] = await orderingAlerts();
    assert.deepEqual(alert.labels, { alertname: 'OrderingKeyBlocked', severity: 'warning' });
    assert.match(
      alert.annotations.description,
      /^An ordered webhook failed finally 31m \d+s ago and its key waits for an operator/,
    );
    // Skipped (settled): the gauge drops back to the head blocked 20 minutes, and the alert resolves.
    await db
      .knex('ordering_places')
      .where({ webhook_id: old })
      .update({ settled_at: new Date(), blocked_since: null, gap: true });
    await eventually('OrderingKeyBlocked resolved', async () => (await orderingAlerts()).length === 0, 30_000);
    await db
      .knex('ordering_places')
      .where({ webhook_id: recent })
      .update({ settled_at: new Date(), blocked_since: null });
    await eventually(
      'the gauge back at 0',
      async () => (await sample('max(partner_service_ordering_oldest_blocked_seconds)'))[0] === 0,
      30_000,
    );
  });
});
