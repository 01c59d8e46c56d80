// The whole path on a real Temporal: ingestion API -> workflow -> partner server -> PostgreSQL rows ->
// Temporal visibility by search attribute. CI has no Temporal server, so this suite runs only when one is
// reachable (TEMPORAL_ADDRESS), a `temporal` CLI is on PATH (dev server), or TEMPORAL_TEST_SERVER_PATH names
// the time-skipping test server. Otherwise it registers one pending test whose title says why.
import assert from 'node:assert/strict';
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { startApiServer, type ApiServer } from '../../api/server';
import { loadConfig, type Config } from '../../lib/config';
import { createLogger } from '../../lib/logger';
import { createTemporalStarter, type WebhookStarter } from '../../webhooks/temporal-starter';
import { startWebhook } from '../../webhooks/start-webhook';
import type { WebhookEventInput } from '../../events/envelope';
import { runTogether, webhookWorkerOptions } from '../../worker/webhook-worker';
import { webhookStatusQuery } from '../../workflows/queries';
import { WEBHOOK_SEARCH_ATTRIBUTES } from '../../temporal/search-attributes';
import type { DeliverySummary } from '../../workflows/types';
import candidateNew from '../fixtures/events/candidate-new.json';
import companySignup from '../fixtures/events/company-signup.json';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { answer, startPartnerServer, type PartnerServer } from './support/partner-server';
import { installQuietTemporalRuntime } from './support/temporal-runtime';

type Target =
  | { kind: 'existing'; address: string }
  | { kind: 'dev-server'; executable: string }
  | { kind: 'time-skipping'; executable: string };

function onPath(binary: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    const candidate = path.join(dir, binary);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

function locateTemporal(): Target | undefined {
  if (process.env.TEMPORAL_TEST_SERVER_PATH) return { kind: 'time-skipping', executable: process.env.TEMPORAL_TEST_SERVER_PATH };
  if (process.env.TEMPORAL_ADDRESS) return { kind: 'existing', address: process.env.TEMPORAL_ADDRESS };
  const cli = onPath('temporal');
  return cli ? { kind: 'dev-server', executable: cli } : undefined;
}

async function createEnvironment(target: Target): Promise<TestWorkflowEnvironment> {
  switch (target.kind) {
    case 'existing':
      // The server must have the search attributes registered (see docs/webhooks.md).
      return TestWorkflowEnvironment.createFromExistingServer({ address: target.address, namespace: process.env.TEMPORAL_NAMESPACE ?? 'default' });
    case 'dev-server':
      return TestWorkflowEnvironment.createLocal({
        server: { executable: { type: 'existing-path', path: target.executable }, searchAttributes: [...WEBHOOK_SEARCH_ATTRIBUTES] },
      });
    case 'time-skipping':
      return TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path: target.executable } } });
  }
}

const INTERNAL_TOKEN = 'e2e-internal-token-0123456789';
const PARTNER_TOKEN = 'e2e-partner-token-abcdef';

async function eventually<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

const target = locateTemporal();

if (!target) {
  describe('webhooks end to end on a real Temporal', () => {
    it('skipped: no Temporal server here (set TEMPORAL_ADDRESS, or put the `temporal` CLI on PATH)', function () {
      this.skip();
    });
  });
} else {
  describe(`webhooks end to end on a real Temporal (${target.kind})`, function () {
    this.timeout(10 * 60_000);
    let env: TestWorkflowEnvironment;
    let db: TestDatabase;
    let partner: PartnerServer;
    let config: Config;
    let starter: WebhookStarter;
    let api: ApiServer;
    let workers: Worker[] = [];
    let stopWorkers!: () => void;
    const workersStopped = new Promise<void>((resolve) => (stopWorkers = resolve));
    let running: Promise<void>;
    const logger = createLogger('silent');

    before(async () => {
      installQuietTemporalRuntime();
      env = await createEnvironment(target);
      db = await createTestDatabase();
      partner = await startPartnerServer();
      config = loadConfig({
        TEMPORAL_ADDRESS: env.address,
        TEMPORAL_NAMESPACE: env.namespace ?? 'default',
        TEMPORAL_TASK_QUEUE: `webhooks-e2e-${randomUUID()}`,
        PARTNER_ENDPOINT: partner.url,
        PARTNER_ACCESS_TOKEN: PARTNER_TOKEN,
        PARTNER_TIMEOUT_MS: '2000',
        INTERNAL_API_TOKEN: INTERNAL_TOKEN,
      });
      starter = createTemporalStarter(config, logger);
      api = await startApiServer({ config, knex: db.knex, logger, webhookStarter: starter }, 0, '127.0.0.1');
      const options = webhookWorkerOptions({ config, knex: db.knex, logger }, env.nativeConnection);
      workers = [await Worker.create(options.delivery), await Worker.create(options.records)];
      running = runTogether(workers, workersStopped);
    });

    after(async () => {
      stopWorkers();
      await running;
      await api?.close();
      await starter?.close();
      await partner?.close();
      await db?.drop();
      await env?.teardown();
    });

    beforeEach(() => {
      partner.requests.length = 0;
      partner.handler = answer(200);
    });

    const submit = async (event: object) => {
      const response = await fetch(`${api.url}/internal/v1/webhooks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(event),
      });
      return { status: response.status, body: (await response.json()) as Record<string, string> };
    };
    const uniqueEvent = <T extends { event_id?: string }>(event: T): T => ({ ...event, event_id: `${event.event_id ?? 'e2e'}-${randomUUID()}` });
    const visible = (query: string, workflowId: string) =>
      eventually(`visibility of ${workflowId} for ${query}`, async () => {
        for await (const execution of env.client.workflow.list({ query })) if (execution.workflowId === workflowId) return execution;
        return undefined;
      });

    it('delivers on the first attempt: API 202, one POST, rows in PostgreSQL, searchable by attribute', async () => {
      const event = uniqueEvent(candidateNew);
      const accepted = await submit(event);
      assert.equal(accepted.status, 202);
      assert.equal(accepted.body.workflow_id, `webhook-candidate-new-${event.event_id}`);
      const summary: DeliverySummary = await env.client.workflow.getHandle(accepted.body.workflow_id).result();
      assert.equal(summary.status, 'delivered');
      assert.equal(summary.attempts.length, 1);

      assert.equal(partner.requests.length, 1);
      const [request] = partner.requests;
      assert.equal(request.headers.authorization, `Bearer ${PARTNER_TOKEN}`);
      assert.equal(request.headers['webhook-id'], accepted.body.webhook_id);
      const { event_id: _id, ...envelope } = event;
      assert.deepEqual(JSON.parse(request.body), envelope);

      const row = await db.knex('webhook_events').where({ id: accepted.body.webhook_id }).first();
      assert.deepEqual([row.status, row.run_id, row.workflow_id], ['delivered', accepted.body.run_id, accepted.body.workflow_id]);
      const attempts = await db.knex('webhook_attempts').where({ webhook_id: accepted.body.webhook_id });
      assert.deepEqual(attempts.map((a) => [a.attempt, a.http_status, a.succeeded]), [[1, 200, true]]);

      const status = await (await fetch(accepted.body.status_url, { headers: { authorization: `Bearer ${INTERNAL_TOKEN}` } })).json();
      assert.equal((status as { status: string }).status, 'delivered');

      // The workflow history never holds the partner token.
      const history = await env.client.workflow.getHandle(accepted.body.workflow_id).fetchHistory();
      assert.ok(!JSON.stringify(history).includes(PARTNER_TOKEN));

      if (!env.supportsTimeSkipping) {
        await visible(`WebhookStatus = 'delivered' AND WebhookEventType = 'candidate' AND WebhookAction = 'new' AND CompanyId = 'acme'`, accepted.body.workflow_id);
      }

      // The same event_id again: 200, the same webhook, no second delivery.
      const again = await submit(event);
      assert.equal(again.status, 200);
      assert.deepEqual(again.body, accepted.body);
      assert.equal(partner.requests.length, 1);
    });

    it('retries after exactly 10 s and delivers on the second attempt', async () => {
      let calls = 0;
      partner.handler = (req, res) => answer(++calls === 1 ? 500 : 204)(req, res, '');
      const accepted = await submit(uniqueEvent(companySignup));
      assert.equal(accepted.status, 202);
      const summary: DeliverySummary = await env.client.workflow.getHandle(accepted.body.workflow_id).result();
      assert.equal(summary.status, 'delivered');
      assert.deepEqual(summary.attempts.map((a) => a.httpStatus), [500, 204]);
      const attempts = await db.knex('webhook_attempts').where({ webhook_id: accepted.body.webhook_id }).orderBy('attempt');
      assert.deepEqual(attempts.map((a) => [a.attempt, a.http_status, a.succeeded]), [[1, 500, false], [2, 204, true]]);
      const gap = attempts[1].scheduled_at.getTime() - (attempts[0].started_at.getTime() + attempts[0].duration_ms);
      assert.ok(gap >= 10_000 && gap < 12_000, `second attempt scheduled ${gap} ms after the first ended`);
      assert.equal(new Set(partner.requests.map((r) => r.headers['webhook-id'])).size, 1);
    });

    it('startWebhook from an upstream Temporal client: same ids, idempotent, and the workflow writes the row', async () => {
      const event = uniqueEvent(companySignup) as WebhookEventInput;
      const options = { taskQueue: config.TEMPORAL_TASK_QUEUE, sendTimeoutMs: 2000 };
      const started = await startWebhook(env.client, event, options);
      assert.equal(started.workflowId, `webhook-company-signup-${event.event_id}`);
      assert.equal((await startWebhook(env.client, event, options)).runId, started.runId, 'running: the same run');
      const summary: DeliverySummary = await env.client.workflow.getHandle(started.workflowId).result();
      assert.equal(summary.status, 'delivered');
      assert.equal((await startWebhook(env.client, event, options)).runId, started.runId, 'completed: still the same run');
      assert.equal(partner.requests.length, 1);
      const row = await db.knex('webhook_events').where({ id: started.webhookId }).first();
      assert.deepEqual([row.event_id, row.status, row.run_id, row.workflow_id], [event.event_id, 'delivered', started.runId, started.workflowId]);
    });

    it('answers the status query while waiting, and lists the webhook as waiting', async function () {
      if (env.supportsTimeSkipping) this.skip(); // the test server would skip the wait itself
      partner.handler = answer(500, 'still down');
      const accepted = await submit(uniqueEvent(candidateNew));
      const handle = env.client.workflow.getHandle(accepted.body.workflow_id);
      const waiting = await eventually('the waiting state', async () => {
        const status = await handle.query(webhookStatusQuery);
        return status.state === 'waiting' ? status : undefined;
      });
      assert.equal(waiting.attempts.length, 1);
      const untilNext = Date.parse(waiting.nextAttemptAt!) - Date.parse(waiting.attempts[0].startedAt);
      assert.ok(untilNext >= 10_000 && untilNext < 12_000, `next attempt ${untilNext} ms after the first`);
      await visible(`WebhookStatus = 'waiting' AND CompanyId = 'acme'`, accepted.body.workflow_id);
      await handle.terminate('end of test');
    });

    it('fails after four attempts at 10 s, 100 s and 1000 s and completes with the summary (time skipping only)', async function () {
      if (!env.supportsTimeSkipping) this.skip(); // 1110 s of real waiting
      partner.handler = answer(503);
      const accepted = await submit(uniqueEvent(candidateNew));
      const summary: DeliverySummary = await env.client.workflow.getHandle(accepted.body.workflow_id).result();
      assert.equal(summary.status, 'failed');
      assert.deepEqual(summary.attempts.map((a) => a.httpStatus), [503, 503, 503, 503]);
      const attempts = await db.knex('webhook_attempts').where({ webhook_id: accepted.body.webhook_id }).orderBy('attempt');
      const gaps = attempts.slice(1).map((a, i) => a.scheduled_at.getTime() - (attempts[i].started_at.getTime() + attempts[i].duration_ms));
      [10_000, 100_000, 1_000_000].forEach((delay, i) => assert.ok(gaps[i] >= delay && gaps[i] < delay + 2000, `gap ${i + 1}: ${gaps[i]}`));
      const row = await db.knex('webhook_events').where({ id: accepted.body.webhook_id }).first();
      assert.equal(row.status, 'failed');
    });
  });
}
