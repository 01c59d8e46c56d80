import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Worker, type NativeConnection } from '@temporalio/worker';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import pino from 'pino';
import { loadConfig } from '../../lib/config';
import { buildWorkflowBundle, WORKFLOWS_PATH } from '../../worker/bundle';
import { startWebhookWorker } from '../../worker/webhook-worker';
import { webhookWorkerOptions } from '../../worker/worker-options';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { scenarios } from '../fixtures/webhook-histories/scenarios';
import { closedPort } from '../support/partner-server';
import { installQuietTemporalRuntime } from '../support/temporal-runtime';
import { capturingLogger } from '../support/capturing-logger';
import { PARTNER_TOKEN } from '../support/tokens';

const quietBundler = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };

describe('webhook worker', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  before(async () => {
    installQuietTemporalRuntime();
    db = await createTestDatabase();
  });
  after(async () => db.drop());

  it('builds a prebuilt workflow bundle that replays a recorded delivery', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'pis-bundle-'));
    try {
      const file = await buildWorkflowBundle(path.join(dir, 'dist', 'workflow-bundle.js'), { logger: quietBundler });
      const scenario = scenarios.find((s) => s.name === 'delivered-third-attempt')!;
      const history = JSON.parse(
        readFileSync(path.join(__dirname, '..', 'fixtures', 'webhook-histories', `${scenario.name}.json`), 'utf8'),
      );
      await Worker.runReplayHistory(
        { workflowBundle: { codePath: file } },
        historyFromJSON(history),
        scenario.workflowId,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('runs the activities with the partner limits from configuration', () => {
    const config = loadConfig({
      PARTNER_ENDPOINT: 'http://127.0.0.1:9/hook',
      PARTNER_ACCESS_TOKEN: PARTNER_TOKEN,
      PARTNER_MAX_CONCURRENCY: '7',
      PARTNER_MAX_PER_SECOND: '13',
      PARTNER_TIMEOUT_MS: '20000',
      WORKER_WORKFLOW_TASK_SLOTS: '5',
      WORKER_RECORD_ACTIVITY_SLOTS: '3',
      WORKER_MAX_CACHED_WORKFLOWS: '99',
      TEMPORAL_TASK_QUEUE: 'webhooks-test',
      TEMPORAL_NAMESPACE: 'partner',
    });
    const { delivery, records } = webhookWorkerOptions(
      { config, knex: db.knex, logger: pino({ level: 'silent' }) },
      {} as NativeConnection,
    );
    // Fixed-size slots: the partner cap holds for the local activities whatever the load.
    assert.deepEqual(delivery.tuner, {
      workflowTaskSlotSupplier: { type: 'fixed-size', numSlots: 5 },
      localActivityTaskSlotSupplier: { type: 'fixed-size', numSlots: 7 },
      activityTaskSlotSupplier: { type: 'fixed-size', numSlots: 7 },
      nexusTaskSlotSupplier: { type: 'fixed-size', numSlots: 1 },
    });
    assert.deepEqual(delivery.workflowTaskPollerBehavior, { type: 'autoscaling' });
    assert.equal(delivery.maxCachedWorkflows, 99);
    // The cap is the partner gate's, across every worker (store/partner/partner-gate.ts): a task-queue rate would not
    // reach local activities.
    assert.equal(delivery.maxTaskQueueActivitiesPerSecond, undefined);
    assert.equal(delivery.taskQueue, 'webhooks-test');
    assert.equal(delivery.namespace, 'partner');
    assert.equal(delivery.shutdownGraceTime, 25_000);
    assert.equal(
      delivery.workflowsPath,
      WORKFLOWS_PATH,
      'without dist/workflow-bundle.js the sources are bundled at start',
    );
    assert.deepEqual(Object.keys(delivery.activities ?? {}), ['deliverAttempt']);
    // The PostgreSQL records run beside it, outside the partner's limits.
    assert.equal(records.taskQueue, 'webhooks-test-records');
    assert.equal(records.namespace, 'partner');
    assert.deepEqual((records.tuner as { activityTaskSlotSupplier: unknown }).activityTaskSlotSupplier, {
      type: 'fixed-size',
      numSlots: 3,
    });
    assert.equal(records.maxTaskQueueActivitiesPerSecond, undefined);
    assert.equal(records.workflowsPath ?? records.workflowBundle, undefined);
    assert.deepEqual(Object.keys(records.activities ?? {}).sort(), [
      'completeErasure',
      'eraseSubjectWebhooks',
      'finishRetentionRun',
      'indexUnindexedWebhooks',
      'purgeDueWebhooks',
      'recordAttempt',
      'recordOutcome',
      'runRecoveryBatch',
      'startRetentionRun',
      'sweepErasureRuns',
    ]);
  });

  /** What every start without PAYLOAD_ENCRYPTION_KEYS and SUBJECT_INDEX_KEYS says (application/personal-data/at-rest-report.ts). */
  const AT_REST_LINES = [
    'PAYLOAD_ENCRYPTION_KEYS is not set: webhook bodies and response excerpts are stored in clear in PostgreSQL',
    'SUBJECT_INDEX_KEYS is not set: the erasure index is keyed with the public development key',
  ];

  it('waits for an unreachable Temporal with one warning, and stops promptly', async () => {
    const { logger, entries } = capturingLogger();
    const port = await closedPort();
    const config = loadConfig({
      PARTNER_ENDPOINT: 'http://127.0.0.1:9/hook',
      PARTNER_ACCESS_TOKEN: PARTNER_TOKEN,
      TEMPORAL_ADDRESS: `127.0.0.1:${port}`,
    });
    const handle = startWebhookWorker({ config, knex: db.knex, logger });
    await new Promise((r) => setTimeout(r, 1500));
    const warnings = entries().filter((l) => l.level === 40 && !AT_REST_LINES.includes(l.msg));
    assert.equal(warnings.length, 1);
    assert.match(
      warnings[0].msg,
      new RegExp(`^Temporal is unreachable at 127\\.0\\.0\\.1:${port}: webhook delivery is paused`),
    );
    assert.equal(
      (warnings[0] as { reason?: string }).reason,
      'nothing answered there: is the Temporal server running, and is TEMPORAL_ADDRESS right?',
    );
    const started = Date.now();
    await handle.stop();
    assert.ok(Date.now() - started < 2000, 'stop() does not wait out the backoff');
  });

  it('connects to Temporal without waiting for its at-rest count: a count held by a lock does not hold the worker', async () => {
    await db.knex.raw(
      `INSERT INTO webhook_events (id, event_id, event_type, action, body) VALUES (gen_random_uuid(), 'at-rest-clear', 'company', 'signup', '{}')`,
    );
    const clearLine =
      '1 bodies and 0 response excerpts are stored in clear although PAYLOAD_ENCRYPTION_KEYS is set: partner-service keys reseal seals them';
    const trx = await db.knex.transaction();
    try {
      await trx.raw('LOCK TABLE webhook_events IN ACCESS EXCLUSIVE MODE');
      const { logger, entries } = capturingLogger();
      const port = await closedPort();
      const key = `k1:${Buffer.alloc(32, 1).toString('base64')}`;
      const config = loadConfig({
        PARTNER_ENDPOINT: 'http://127.0.0.1:9/hook',
        PARTNER_ACCESS_TOKEN: PARTNER_TOKEN,
        TEMPORAL_ADDRESS: `127.0.0.1:${port}`,
        PAYLOAD_ENCRYPTION_KEYS: key,
      });
      const handle = startWebhookWorker({ config, knex: db.knex, logger });
      try {
        const unreachable = () => entries().some((l) => l.msg.startsWith('Temporal is unreachable'));
        for (let waited = 0; !unreachable() && waited < 10_000; waited += 50)
          await new Promise((r) => setTimeout(r, 50));
        assert.ok(unreachable(), 'the worker went on to Temporal while its count waited for the lock');
        assert.equal(
          entries().filter((l) => l.msg === clearLine).length,
          0,
          'the count cannot have run under the lock',
        );
        await trx.commit();
        for (let waited = 0; !entries().some((l) => l.msg === clearLine) && waited < 10_000; waited += 50)
          await new Promise((r) => setTimeout(r, 50));
        assert.deepEqual(
          entries()
            .filter((l) => l.msg === clearLine)
            .map((l) => l.level),
          [40],
          'the count ran once the lock was gone',
        );
      } finally {
        await handle.stop();
      }
    } finally {
      if (!trx.isCompleted()) await trx.rollback();
      await db.knex.raw(`DELETE FROM webhook_events WHERE event_id = 'at-rest-clear'`);
    }
  });

  it('does not poll without a partner endpoint, and says why', async () => {
    const { logger, entries } = capturingLogger();
    const handle = startWebhookWorker({
      config: loadConfig({ PARTNER_ACCESS_TOKEN: PARTNER_TOKEN, TEMPORAL_ADDRESS: '127.0.0.1:9' }),
      knex: db.knex,
      logger,
    });
    await handle.done;
    // The index key's line reads PostgreSQL (the deployment's keys), so it comes after the lines that need no query.
    assert.deepEqual(
      entries().map((l) => [l.level, l.msg]),
      [
        [40, AT_REST_LINES[0]],
        [
          40,
          'PARTNER_ENDPOINT is not set: webhook delivery is paused; the worker does not poll and webhooks wait in Temporal',
        ],
        [40, AT_REST_LINES[1]],
      ],
    );
    await handle.stop();
  });
});
