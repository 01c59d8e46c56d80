// A standalone `partner-service worker` is observable on its own port: /healthz, /readyz (PostgreSQL and
// Temporal polling) and /metrics with its attempts, their durations, the deliveries waiting on a timer and
// the Temporal SDK's own series. On a real dev server, PostgreSQL and a loopback partner.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { Client, Connection } from '@temporalio/client';
import { findFreePort } from '../../lib/ports';
import { loadConfig } from '../../lib/config';
import { createLogger } from '../../lib/logger';
import type { DevServer } from '../../temporal/dev-server';
import { acceptWebhook } from '../../application/ingestion/ingest';
import { prepareWebhook } from '../../application/ingestion/start-webhook';
import { createTemporalGateway } from '../../temporal/gateway';
import type { DeliverySummary } from '../../workflows/types';
import companySignup from '../fixtures/events/company-signup.json';
import { startCli, waitForExit } from '../support/cli';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { eventually } from '../support/eventually';
import { startTestDevServer, tempDir } from '../support/temporal';
import { startPartnerServer, type PartnerServer } from '../support/partner-server';
import { IN_CLEAR } from '../support/at-rest';
import { sample } from '../support/metrics-text';
import { PARTNER_TOKEN } from '../support/tokens';

const logger = createLogger('silent');

describe('the standalone worker serves /healthz, /readyz and /metrics on its own port', function () {
  this.timeout(120_000);
  let work: string;
  let server: DevServer;
  let connection: Connection;
  let client: Client;
  let partner: PartnerServer;
  let db: TestDatabase;
  /** webhook-ids whose first POST the partner refuses with 500. */
  const failFirst = new Set<string>();
  const children: Array<ReturnType<typeof startCli>['child']> = [];

  before(async () => {
    work = await tempDir('worker-http');
    server = await startTestDevServer();
    connection = await Connection.connect({ address: server.address });
    client = new Client({ connection });
    db = await createTestDatabase();
    const seen = new Set<string>();
    partner = await startPartnerServer((req, res) => {
      const id = String(req.headers['webhook-id']);
      const refuse = failFirst.has(id) && !seen.has(id);
      seen.add(id);
      res.writeHead(refuse ? 500 : 204).end();
    });
  });

  after(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await connection?.close();
    await partner?.close();
    await db?.drop();
    await server?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  async function startWorker(temporalAddress: string, taskQueue: string) {
    const port = await findFreePort();
    const worker = startCli(
      ['worker'],
      {
        PATH: process.env.PATH,
        DATABASE_URL: db.url,
        TEMPORAL_ADDRESS: temporalAddress,
        TEMPORAL_TASK_QUEUE: taskQueue,
        PARTNER_ENDPOINT: partner.url,
        PARTNER_ACCESS_TOKEN: PARTNER_TOKEN,
        WORKER_HTTP_PORT: String(port),
        LOG_LEVEL: 'info',
      },
      work,
      /worker health and metrics listening/,
    );
    children.push(worker.child);
    await worker.started;
    return { ...worker, url: `http://127.0.0.1:${port}` };
  }

  async function submit(taskQueue: string, refuseFirst: boolean) {
    const prepared = prepareWebhook({ ...companySignup, event_id: `observability-${randomUUID()}` }, 2000);
    if (refuseFirst) failFirst.add(prepared.webhookId);
    const gateway = createTemporalGateway(
      loadConfig({ TEMPORAL_ADDRESS: server.address, TEMPORAL_TASK_QUEUE: taskQueue }),
      logger,
    );
    try {
      await acceptWebhook(db.knex, IN_CLEAR, gateway, prepared);
    } finally {
      await gateway.close();
    }
    return client.workflow.getHandle(prepared.workflowId);
  }

  const metrics = async (url: string) => {
    const res = await fetch(`${url}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type')!, /^text\/plain; version=0\.0\.4/);
    return res.text();
  };

  it('answers /readyz 503 with the reason until it polls Temporal, while /healthz answers 200', async () => {
    const worker = await startWorker(`127.0.0.1:${await findFreePort()}`, `observability-${randomUUID()}`);
    const health = await fetch(`${worker.url}/healthz`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: 'ok' });
    const ready = await fetch(`${worker.url}/readyz`);
    assert.equal(ready.status, 503);
    assert.deepEqual(await ready.json(), {
      status: 'unavailable',
      checks: { database: 'ok', temporal: 'connecting' },
      reason: 'the worker is not polling Temporal: it is connecting (see the log for why)',
    });
    worker.child.kill('SIGTERM');
    assert.equal(await waitForExit(worker.child), 0);
  });

  it('is ready while it polls; its /metrics counts attempts, times them, shows deliveries waiting on a timer and the SDK series', async () => {
    const queue = `observability-${randomUUID()}`;
    const worker = await startWorker(server.address, queue);
    await eventually('the worker polls', async () => (await fetch(`${worker.url}/readyz`)).status === 200);
    const ready = await fetch(`${worker.url}/readyz`);
    assert.deepEqual(await ready.json(), { status: 'ready', checks: { database: 'ok', temporal: 'polling' } });

    const firstTry = await submit(queue, false);
    const retried = await submit(queue, true);
    assert.equal(((await firstTry.result()) as DeliverySummary).status, 'delivered');
    await eventually(
      'the refused delivery waits on its 10 s timer',
      async () => sample(await metrics(worker.url), 'partner_service_webhooks_waiting') === 1,
    );

    let text = await metrics(worker.url);
    const labels = '{event_type="company",action="signup",outcome=';
    assert.equal(sample(text, `partner_service_webhook_attempts_total${labels}"2xx"}`), 1);
    assert.equal(sample(text, `partner_service_webhook_attempts_total${labels}"5xx"}`), 1);
    assert.equal(sample(text, `partner_service_webhook_attempt_duration_seconds_count${labels}"2xx"}`), 1);
    assert.equal(sample(text, `partner_service_webhook_attempt_duration_seconds_count${labels}"5xx"}`), 1);
    assert.ok(
      sample(
        text,
        `partner_service_webhook_attempt_duration_seconds_bucket{le="60",event_type="company",action="signup",outcome="2xx"}`,
      ) === 1,
    );
    // The Temporal SDK's own series, merged into the same answer.
    assert.match(text, /^temporal_workflow_task_schedule_to_start_latency_seconds_count\{.*\} [1-9]/m);
    assert.match(text, /^temporal_sticky_cache_size\{.*\} \d+/m);
    assert.match(text, /^temporal_worker_task_slots_available\{.*worker_type="LocalActivityWorker".*\} 10$/m);

    assert.equal(((await retried.result()) as DeliverySummary).status, 'delivered');
    text = await metrics(worker.url);
    assert.equal(sample(text, 'partner_service_webhooks_waiting'), 0);
    assert.equal(sample(text, `partner_service_webhook_attempts_total${labels}"2xx"}`), 2);

    worker.child.kill('SIGTERM');
    assert.equal(await waitForExit(worker.child), 0);
  });
});
