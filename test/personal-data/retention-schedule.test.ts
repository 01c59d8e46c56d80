import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { loadConfig, type Config } from '../../lib/config';
import { retentionScheduleId } from '../../lib/retention';
import type { DevServer } from '../../temporal/dev-server';
import { startWebhookWorker, type WebhookWorkerHandle } from '../../worker/webhook-worker';
import { useTestDatabase } from '../support/database';
import { eventually } from '../support/eventually';
import { startTestDevServer } from '../support/temporal';
import { capturingLogger } from '../support/capturing-logger';
import { PARTNER_TOKEN } from '../support/tokens';

const DAY = 86_400_000;

describe('retention schedule and workflow (a real dev server, two workers)', function () {
  this.timeout(180_000);
  const db = useTestDatabase();
  let server: DevServer;
  let connection: Connection;
  let client: Client;
  const taskQueue = `retention-${randomUUID().slice(0, 8)}`;
  const scheduleId = retentionScheduleId(taskQueue);
  const workers: WebhookWorkerHandle[] = [];
  const logs = [capturingLogger(), capturingLogger()];

  const configFor = (extra: Record<string, string> = {}): Config =>
    loadConfig({
      PARTNER_ENDPOINT: 'http://127.0.0.1:9/hook',
      PARTNER_ACCESS_TOKEN: PARTNER_TOKEN,
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_TASK_QUEUE: taskQueue,
      WEBHOOK_PAYLOAD_RETENTION_DAYS: '1',
      WEBHOOK_LOG_RETENTION_DAYS: '60',
      ...extra,
    });

  before(async () => {
    server = await startTestDevServer();
    connection = await Connection.connect({ address: server.address });
    client = new Client({ connection });
    // Closed runs kept 3 days: longer than the 1 day of payload retention the workers run with.
    await connection.workflowService.updateNamespace({
      namespace: 'default',
      config: { workflowExecutionRetentionTtl: { seconds: 3 * 86_400 } as never },
    });
    // Two workers of one task queue starting at once.
    for (const { logger } of logs)
      workers.push(startWebhookWorker({ config: configFor(), knex: db.knex, logger }, { restartDelayMs: 500 }));
    await eventually('both workers poll', async () => workers.every((w) => w.state() === 'polling'), 90_000);
  });

  after(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await connection?.close();
    await server?.stop();
  });

  it('leaves exactly one schedule per task queue, hourly, overlap SKIP, however many workers start', async () => {
    const ids: string[] = [];
    for await (const schedule of client.schedule.list())
      if (schedule.scheduleId.startsWith('webhook-retention-')) ids.push(schedule.scheduleId);
    assert.deepEqual(ids, [scheduleId]);
    const description = await client.schedule.getHandle(scheduleId).describe();
    assert.deepEqual(description.spec.intervals, [{ every: 3_600_000, offset: undefined }]);
    assert.equal(description.policies.overlap, 'SKIP');
    assert.equal(description.action.workflowType, 'webhookRetention');
    assert.equal(description.action.taskQueue, taskQueue);
    assert.deepEqual(description.action.args, [{ trigger: 'schedule' }]);
    const outcomes = logs
      .flatMap(({ entries }) =>
        entries()
          .filter((e) => /^retention schedule /.test(e.msg))
          .map((e) => e.msg),
      )
      .sort();
    assert.deepEqual(outcomes, ['retention schedule created', 'retention schedule updated']);
  });

  it("records the namespace's retention for the log purge, which keeps a row while Temporal may hold its run", async () => {
    assert.deepEqual(await db.knex('temporal_namespaces').select('namespace', 'retention_seconds'), [
      { namespace: 'default', retention_seconds: 3 * 86_400 },
    ]);
  });

  it('warns once per worker when Temporal keeps closed runs longer than the payload retention', () => {
    for (const { entries } of logs) {
      const warnings = entries().filter((e) => e.level === 40 && /keeps closed workflow runs/.test(e.msg));
      assert.deepEqual(
        warnings.map((e) => e.msg),
        [
          'Temporal namespace default keeps closed workflow runs for 3 days, longer than WEBHOOK_PAYLOAD_RETENTION_DAYS (1): webhook bodies stay ' +
            "in those runs' histories until then; shorten it with temporal operator namespace update -n default --retention 24h",
        ],
      );
    }
  });

  it('runs the purge when the schedule fires: removes what is due, records the run with exact counts, keeps what is not', async () => {
    const now = Date.now();
    const ids = { oldRow: randomUUID(), oldBody: randomUUID(), young: randomUUID(), pending: randomUUID() };
    const rows = [
      { id: ids.oldRow, status: 'delivered', finished_at: new Date(now - 61 * DAY) },
      { id: ids.oldBody, status: 'failed', finished_at: new Date(now - 2 * DAY) },
      { id: ids.young, status: 'delivered', finished_at: new Date(now - DAY / 2) },
      { id: ids.pending, status: 'pending', finished_at: null },
    ];
    for (const row of rows) {
      await db.knex('webhook_events').insert({
        ...row,
        event_id: `sched-${row.id}`,
        event_type: 'candidate',
        action: 'new',
        company_id: 'acme',
        body: '{"data":{}}',
        workflow_id: `wf-${row.id}`,
        run_id: randomUUID(),
        accepted_at: new Date(now - 100 * DAY),
        created_at: new Date(now - 100 * DAY),
      });
    }
    await client.schedule.getHandle(scheduleId).trigger();
    await eventually(
      'the scheduled run finishes',
      async () => Boolean(await db.knex('retention_runs').whereNotNull('finished_at').first()),
      60_000,
    );
    const runs = await db
      .knex('retention_runs')
      .select('task_queue', 'trigger', 'bodies_removed', 'rows_deleted', 'payload_cutoff', 'log_cutoff', 'started_at');
    assert.equal(runs.length, 1);
    const [run] = runs;
    assert.deepEqual(
      { ...run, payload_cutoff: undefined, log_cutoff: undefined, started_at: undefined },
      {
        task_queue: taskQueue,
        trigger: 'schedule',
        bodies_removed: 1,
        rows_deleted: 1,
        payload_cutoff: undefined,
        log_cutoff: undefined,
        started_at: undefined,
      },
    );
    assert.equal(run.started_at.getTime() - run.payload_cutoff.getTime(), DAY);
    assert.equal(run.started_at.getTime() - run.log_cutoff.getTime(), 60 * DAY);
    const left = await db.knex('webhook_events').orderBy('id').select('id', 'payload_removed_reason');
    assert.deepEqual(
      left.sort((a, b) => a.id.localeCompare(b.id)),
      [
        { id: ids.oldBody, payload_removed_reason: 'retention' },
        { id: ids.young, payload_removed_reason: null },
        { id: ids.pending, payload_removed_reason: null },
      ].sort((a, b) => a.id.localeCompare(b.id)),
    );
    // The run's workflow completed with the same counts.
    const found: string[] = [];
    for await (const execution of client.workflow.list({
      query: `WorkflowType = 'webhookRetention' AND TaskQueue = '${taskQueue}'`,
    }))
      found.push(execution.workflowId);
    assert.equal(found.length, 1);
    assert.match(found[0], new RegExp(`^${scheduleId}-`));
    const result = await client.workflow.getHandle(found[0]).result();
    assert.deepEqual(
      { bodiesRemoved: result.bodiesRemoved, rowsDeleted: result.rowsDeleted, trigger: result.trigger },
      { bodiesRemoved: 1, rowsDeleted: 1, trigger: 'schedule' },
    );
  });

  it('continues as new when a run needs more purge calls than one history holds, on the same run record, with exact counts', async () => {
    const now = Date.now();
    for (let i = 0; i < 7; i++) {
      const id = randomUUID();
      const at = new Date(now - (70 + i) * DAY);
      await db.knex('webhook_events').insert({
        id,
        event_id: `continued-${id}`,
        event_type: 'candidate',
        action: 'new',
        company_id: 'acme',
        body: '{"data":{}}',
        workflow_id: `wf-${id}`,
        run_id: randomUUID(),
        status: 'delivered',
        accepted_at: at,
        created_at: at,
        finished_at: at,
      });
    }
    // Two rows per batch, one batch per call (no time budget), two calls per run: 2 + 2, then 2 + 1 in a second run.
    const handle = await client.workflow.start('webhookRetention', {
      taskQueue,
      workflowId: `retention-continued-${randomUUID()}`,
      args: [{ trigger: 'manual', limits: { batchSize: 2, budgetMs: 0, callsPerRun: 2 } }],
    });
    const result = await handle.result();
    assert.deepEqual(
      { trigger: result.trigger, bodiesRemoved: result.bodiesRemoved, rowsDeleted: result.rowsDeleted },
      { trigger: 'manual', bodiesRemoved: 0, rowsDeleted: 7 },
    );
    // Visibility lags the runs' close by a moment.
    await eventually(
      'both runs listed as closed',
      async () => {
        const runs: string[] = [];
        for await (const execution of client.workflow.list({ query: `WorkflowId = '${handle.workflowId}'` }))
          runs.push(execution.status.name);
        return JSON.stringify(runs.sort()) === JSON.stringify(['COMPLETED', 'CONTINUED_AS_NEW']);
      },
      10_000,
    );
    const recorded = await db
      .knex('retention_runs')
      .where({ id: result.runId })
      .first('trigger', 'rows_deleted', 'bodies_removed');
    assert.deepEqual(recorded, { trigger: 'manual', rows_deleted: 7, bodies_removed: 0 });
    assert.equal(
      await db
        .knex('webhook_events')
        .where('event_id', 'like', 'continued-%')
        .count({ n: '*' })
        .first()
        .then((r) => Number(r!.n)),
      0,
    );
  });
});
