// The whole retry schedule on Temporal's time-skipping test server: 1110 s of timers run in about a second.
// Times are compared on the server's clock (history event times), never with an activity's wall clock.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { findFreePort } from '../../lib/ports';
import { loadConfig } from '../../lib/config';
import { createLogger } from '../../lib/logger';
import { startWebhook } from '../../application/ingestion/start-webhook';
import type { WebhookEventInput } from '../../events/envelope';
import type { DeliverySummary } from '../../workflows/types';
import companySignup from '../fixtures/events/company-signup.json';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { gapsBetweenSends, timerDurations } from '../support/history-timing';
import { createTimeSkippingEnvironment, startTestWorker, type TestWorker } from '../support/temporal';
import { answer, startPartnerServer, type PartnerHandler, type PartnerServer } from '../support/partner-server';
import { PARTNER_TOKEN } from '../support/tokens';

const SCHEDULE_MS = [10_000, 100_000, 1_000_000];
const PARTNER_TIMEOUT_MS = 1000;

describe('webhook schedule on the time-skipping test server', function () {
  this.timeout(120_000);
  let env: TestWorkflowEnvironment;
  let db: TestDatabase;
  let partner: PartnerServer;
  const workers: TestWorker[] = [];
  const queue = `ts-${randomUUID()}`;
  const refusedQueue = `ts-refused-${randomUUID()}`;

  before(async () => {
    env = await createTimeSkippingEnvironment();
    db = await createTestDatabase();
    partner = await startPartnerServer();
    const logger = createLogger('silent');
    const worker = (taskQueue: string, endpoint: string) =>
      startTestWorker(
        {
          config: loadConfig({
            TEMPORAL_TASK_QUEUE: taskQueue,
            PARTNER_ENDPOINT: endpoint,
            PARTNER_ACCESS_TOKEN: PARTNER_TOKEN,
            PARTNER_TIMEOUT_MS: String(PARTNER_TIMEOUT_MS),
          }),
          knex: db.knex,
          logger,
        },
        env.nativeConnection,
      );
    workers.push(await worker(queue, partner.url));
    // Nothing listens there: every attempt is refused.
    workers.push(await worker(refusedQueue, `http://127.0.0.1:${await findFreePort()}/hooks`));
  });

  after(async () => {
    for (const worker of workers) await worker.stop();
    await partner?.close();
    await db?.drop();
    await env?.teardown();
  });

  /** Answers the n-th POST with handlers[n-1]; the last handler repeats. */
  const script = (...handlers: PartnerHandler[]): PartnerHandler => {
    let calls = 0;
    return (req, res, body) => handlers[Math.min(++calls, handlers.length) - 1](req, res, body);
  };
  const hang: PartnerHandler = () => undefined;

  async function deliver(handler: PartnerHandler, taskQueue = queue) {
    partner.requests.length = 0;
    partner.handler = handler;
    const event = { ...companySignup, event_id: `ts-${randomUUID()}` } as WebhookEventInput;
    const started = await startWebhook(env.client, event, { taskQueue, sendTimeoutMs: PARTNER_TIMEOUT_MS });
    const handle = env.client.workflow.getHandle(started.workflowId);
    const summary: DeliverySummary = await handle.result();
    const history = await handle.fetchHistory();
    const rows = await db.knex('webhook_attempts').where({ webhook_id: started.webhookId }).orderBy('attempt');
    const row = await db.knex('webhook_events').where({ id: started.webhookId }).first();
    return { summary, history, rows, row };
  }

  it('fails after four attempts, 10 s, 100 s and 1000 s apart in workflow time, and records each', async () => {
    const { summary, history, rows, row } = await deliver(answer(500));
    assert.equal(summary.status, 'failed');
    assert.deepEqual(
      summary.attempts.map((a) => a.httpStatus),
      [500, 500, 500, 500],
    );
    assert.deepEqual(timerDurations(history), SCHEDULE_MS);
    gapsBetweenSends(history).forEach((gap, i) =>
      assert.ok(gap >= SCHEDULE_MS[i] && gap < SCHEDULE_MS[i] + 1000, `gap ${i + 1}: ${gap} ms`),
    );
    assert.equal(gapsBetweenSends(history).length, 3);
    assert.equal(partner.requests.length, 4);
    assert.deepEqual(
      rows.map((r) => [r.attempt, r.http_status, r.succeeded]),
      [
        [1, 500, false],
        [2, 500, false],
        [3, 500, false],
        [4, 500, false],
      ],
    );
    assert.equal(row.status, 'failed');
  });

  it('stops at the first 2XX: success on attempt 3 makes no fourth POST and starts no third timer', async () => {
    const { summary, history, rows, row } = await deliver(script(answer(500), answer(502), answer(204)));
    assert.equal(summary.status, 'delivered');
    assert.deepEqual(
      summary.attempts.map((a) => a.httpStatus),
      [500, 502, 204],
    );
    assert.deepEqual(timerDurations(history), [10_000, 100_000]);
    gapsBetweenSends(history).forEach((gap, i) =>
      assert.ok(gap >= SCHEDULE_MS[i] && gap < SCHEDULE_MS[i] + 1000, `gap ${i + 1}: ${gap} ms`),
    );
    assert.equal(partner.requests.length, 3);
    assert.deepEqual(
      rows.map((r) => [r.attempt, r.http_status, r.succeeded]),
      [
        [1, 500, false],
        [2, 502, false],
        [3, 204, true],
      ],
    );
    assert.equal(row.status, 'delivered');
  });

  const classes: Array<{
    name: string;
    handler: PartnerHandler;
    taskQueue?: () => string;
    expect: { httpStatus: number | null; errorClass: string | null };
  }> = [
    {
      name: '3XX (not followed)',
      handler: (req, res) => answer(302, '', { location: `http://127.0.0.1:${partner.port}/elsewhere` })(req, res, ''),
      expect: { httpStatus: 302, errorClass: null },
    },
    { name: '4XX', handler: answer(404, 'no such hook'), expect: { httpStatus: 404, errorClass: null } },
    { name: '5XX', handler: answer(503), expect: { httpStatus: 503, errorClass: null } },
    { name: 'timeout', handler: hang, expect: { httpStatus: null, errorClass: 'timeout' } },
    {
      name: 'connection refused',
      handler: hang,
      taskQueue: () => refusedQueue,
      expect: { httpStatus: null, errorClass: 'connection_refused' },
    },
  ];
  for (const outcome of classes) {
    it(`retries a ${outcome.name} outcome on the same schedule and ends as failed`, async () => {
      const { summary, history, rows, row } = await deliver(outcome.handler, outcome.taskQueue?.() ?? queue);
      assert.equal(summary.status, 'failed');
      assert.deepEqual(
        summary.attempts.map((a) => [a.httpStatus, a.errorClass]),
        Array(4).fill([outcome.expect.httpStatus, outcome.expect.errorClass]),
      );
      assert.deepEqual(timerDurations(history), SCHEDULE_MS);
      gapsBetweenSends(history).forEach((gap, i) =>
        assert.ok(gap >= SCHEDULE_MS[i] && gap < SCHEDULE_MS[i] + 1000, `gap ${i + 1}: ${gap} ms`),
      );
      // Refused attempts never reach the partner; every other class is exactly one POST per attempt.
      assert.equal(partner.requests.length, outcome.taskQueue ? 0 : 4);
      assert.equal(rows.length, 4);
      assert.ok(
        rows.every(
          (r) =>
            r.http_status === outcome.expect.httpStatus && r.error_class === outcome.expect.errorClass && !r.succeeded,
        ),
      );
      assert.equal(row.status, 'failed');
    });
  }
});
