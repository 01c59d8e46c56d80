// An hour-long partner outage on Temporal's time-skipping test server: longer than the whole retry schedule
// (1110 s), so without the breaker every webhook would fail. With it, the deliveries are held, their attempts
// unspent, and every one is delivered once the partner is back. Workflow time is read from the histories.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { loadConfig } from '../../lib/config';
import { createLogger } from '../../lib/logger';
import { startWebhook, type StartedWebhook } from '../../application/ingestion/start-webhook';
import { runPartnerRecovery } from '../../application/partner/partner-recovery';
import { probePartner } from '../../partner-client/partner-probe';
import { partnerReleasedSignal } from '../../workflows/webhooks/messages';
import type { WebhookEventInput } from '../../events/envelope';
import type { DeliverySummary } from '../../workflows/types';
import companySignup from '../fixtures/events/company-signup.json';
import { withOwnEntity } from '../support/own-entity';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { eventually } from '../support/eventually';
import { createTimeSkippingEnvironment, startTestWorker, type TestWorker } from '../support/temporal';
import { answer, startPartnerServer, type PartnerServer } from '../support/partner-server';
import { PARTNER_TOKEN } from '../support/tokens';

const HOUR_MS = 3_600_000;

describe('an hour-long outage on the time-skipping test server, with the default breaker and hold ceiling', function () {
  this.timeout(120_000);
  let env: TestWorkflowEnvironment;
  let db: TestDatabase;
  let partner: PartnerServer;
  let worker: TestWorker;
  const stopGuard = new AbortController();
  let guard: Promise<void>;
  const config = loadConfig({
    TEMPORAL_TASK_QUEUE: `outage-ts-${randomUUID()}`,
    PARTNER_ACCESS_TOKEN: PARTNER_TOKEN,
    PARTNER_ENDPOINT: 'http://127.0.0.1:9/unset',
    PARTNER_TIMEOUT_MS: '1000',
    // Probes run on the wall clock: short, so the partner's return is seen within the test.
    PARTNER_PROBE_INTERVAL_MS: '300',
  });

  before(async () => {
    env = await createTimeSkippingEnvironment();
    db = await createTestDatabase();
    partner = await startPartnerServer(answer(503));
    const running = { ...config, PARTNER_ENDPOINT: partner.url };
    const logger = createLogger('silent');
    worker = await startTestWorker({ config: running, knex: db.knex, logger }, env.nativeConnection);
    const gateway = {
      release: (workflowId: string) =>
        env.client.workflow
          .getHandle(workflowId)
          .signal(partnerReleasedSignal)
          .then(() => true),
    };
    guard = runPartnerRecovery(
      { config: running, knex: db.knex, logger, gateway, probe: () => probePartner(running) },
      stopGuard.signal,
    );
  });

  after(async () => {
    stopGuard.abort();
    await guard;
    await worker?.stop();
    await partner?.close();
    await db?.drop();
    await env?.teardown();
  });

  const start = (prefix: string) =>
    startWebhook(
      env.client,
      withOwnEntity({ ...companySignup, event_id: `${prefix}-${randomUUID()}` }) as WebhookEventInput,
      { taskQueue: config.TEMPORAL_TASK_QUEUE, sendTimeoutMs: 1000 },
    );
  const postsOf = (webhookId: string) =>
    partner.requests.filter((r) => r.method === 'POST' && r.headers['webhook-id'] === webhookId).length;
  const gate = () => db.knex('partner_gate').where({ task_queue: config.TEMPORAL_TASK_QUEUE }).first();

  it('holds every delivery through an hour of 503s and delivers each once the partner answers, none with more than 4 POSTs', async () => {
    // Ten webhooks meet the outage and trip the breaker (PARTNER_BREAKER_FAILURES, 10); five more arrive while it holds.
    const tripping: StartedWebhook[] = [];
    for (let i = 0; i < 10; i++) tripping.push(await start('trip'));
    await eventually('the breaker tripped', async () => (await gate())?.tripped_at != null, 20_000);
    const later: StartedWebhook[] = [];
    for (let i = 0; i < 5; i++) later.push(await start('later'));
    const all = [...tripping, ...later];
    await eventually(
      'the later five held',
      async () => {
        const [{ count }] = await db
          .knex('webhook_events')
          .whereIn(
            'id',
            later.map((w) => w.webhookId),
          )
          .whereNotNull('held_since')
          .count({ count: '*' });
        return Number(count) === 5;
      },
      20_000,
    );

    // An hour of workflow time: the tripping webhooks' timers (10 s, 100 s, 1000 s) fall due inside it.
    await env.sleep(HOUR_MS);
    const postsDuringOutage = partner.requests.filter((r) => r.method === 'POST').length;
    const probesDuringOutage = partner.requests.filter((r) => r.method === 'HEAD').length;
    assert.equal(Number((await gate()).trips), 1);
    partner.handler = answer(204);
    // Polled in PostgreSQL, not with result(): waiting on a result would let the server skip to the ceiling timer.
    await eventually(
      'all fifteen delivered',
      async () => {
        const [{ count }] = await db
          .knex('webhook_events')
          .whereIn(
            'id',
            all.map((w) => w.webhookId),
          )
          .where({ status: 'delivered' })
          .count({ count: '*' });
        return Number(count) === 15;
      },
      30_000,
    );

    const perWebhook = all.map((w) => postsOf(w.webhookId));
    for (const webhook of all) {
      const handle = env.client.workflow.getHandle(webhook.workflowId);
      const summary: DeliverySummary = await handle.result();
      assert.equal(summary.status, 'delivered');
      const events = (await handle.fetchHistory()).events ?? [];
      const startedAt = Number(events[0].eventTime!.seconds);
      const endedAt = Number(events.at(-1)!.eventTime!.seconds);
      assert.ok(
        endedAt - startedAt >= 3500,
        `delivered ${endedAt - startedAt} s of workflow time after its start: past the outage`,
      );
    }
    console.log(
      `      hour-long outage (time-skipping): 15 webhooks, ${postsDuringOutage} POSTs and ${probesDuringOutage} probes during it, POSTs per webhook ${perWebhook.join(' ')}, all delivered`,
    );
    // The tripping ten spent one attempt each; their held retries and the later five spent none.
    assert.deepEqual(perWebhook, [...Array(10).fill(2), ...Array(5).fill(1)]);
    assert.equal(postsDuringOutage, 10);
  });
});
