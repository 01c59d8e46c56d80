// The call that starts a delivery says so, even when the worker got there first: with eager start the worker's
// claim can write the run id before the start call records it. A gateway that returns only once the claim has
// written the run id makes that order certain, on a real dev server with the service's worker.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startApiServer, type ApiServer } from '../../api/server';
import { startWebhook } from '../../application/ingestion/start-webhook';
import type { WebhookEventInput } from '../../events/envelope';
import type { TemporalGateway } from '../../temporal/gateway';
import { redeliverMatching, redeliverWebhook } from '../../application/webhooks/webhook-operations';
import { createLogger } from '../../lib/logger';
import jobNew from '../fixtures/events/job-new.json';
import { eventually } from '../support/eventually';
import { startWebhookStack, type WebhookStack } from '../support/webhook-stack';
import { IN_CLEAR } from '../support/at-rest';
import { OPERATOR } from '../support/operator';
import { postWebhook } from '../support/api';

describe('a start the worker overtakes', function () {
  this.timeout(120_000);
  let stack: WebhookStack;
  let api: ApiServer;
  /** The real gateway, whose starts return only after the worker has claimed the first attempt. */
  let lateGateway: TemporalGateway;

  const runIdOfRow = async (workflowId: string) =>
    (await stack.db.knex('webhook_events').where({ workflow_id: workflowId }).first('run_id'))?.run_id;

  before(async () => {
    stack = await startWebhookStack();
    const real = stack.gateway;
    lateGateway = {
      ...real,
      async start(webhook) {
        const runId = await real.start(webhook);
        await eventually(
          'the claim to write the run id',
          async () => (await runIdOfRow(webhook.workflowId)) === runId,
          20_000,
        );
        return runId;
      },
    };
    api = await startApiServer(
      { config: stack.config, knex: stack.db.knex, logger: createLogger('silent'), temporalGateway: lateGateway },
      0,
      '127.0.0.1',
    );
  });

  after(async () => {
    await api?.close();
    await stack?.close();
  });

  const post = (event: unknown) => postWebhook(api.url, stack.config.INTERNAL_API_TOKEN, event);

  it('answers 202 to the call that started the delivery, and 200 to a repeat', async () => {
    const event = { ...jobNew, event_id: `race-${randomUUID()}` };
    const first = await post(event);
    assert.equal(first.status, 202);
    const body = (await first.json()) as { run_id: string; workflow_id: string };
    assert.equal(await runIdOfRow(body.workflow_id), body.run_id);
    const again = await post(event);
    assert.equal(again.status, 200);
    assert.deepEqual(await again.json(), body);
  });

  it('answers 200 for an event another Temporal client started with startWebhook: the worker wrote its row, and no call started it', async () => {
    const event = { ...jobNew, event_id: `race-${randomUUID()}` };
    const started = await startWebhook(stack.client, event as WebhookEventInput, {
      taskQueue: stack.config.TEMPORAL_TASK_QUEUE,
      sendTimeoutMs: 2000,
    });
    await eventually(
      'the worker to write the row',
      async () => (await runIdOfRow(started.workflowId)) === started.runId,
    );
    const repeat = await post(event);
    assert.equal(repeat.status, 200);
    assert.deepEqual(await repeat.json(), {
      webhook_id: started.webhookId,
      event_id: started.eventId,
      workflow_id: started.workflowId,
      run_id: started.runId,
      status_url: `${api.url}/internal/v1/webhooks/${started.webhookId}`,
    });
  });

  it('counts a redelivery the worker claimed first as started, once', async () => {
    const company = `race-co-${randomUUID().slice(0, 8)}`;
    const event = {
      ...jobNew,
      event_id: `race-${randomUUID()}`,
      data: { ...jobNew.data, company: { ...jobNew.data.company, id: company } },
    };
    const accepted = (await (await post(event)).json()) as { webhook_id: string };
    await eventually(
      'the original delivered',
      async () =>
        (await stack.db.knex('webhook_events').where({ id: accepted.webhook_id }).first('status')).status ===
        'delivered',
    );
    const options = { sendTimeoutMs: 2000, atRest: IN_CLEAR };
    assert.equal(
      (await redeliverWebhook(stack.db.knex, lateGateway, OPERATOR, accepted.webhook_id, options)).started,
      true,
    );
    const filter = { status: 'delivered', eventType: 'job', action: 'new', companyId: company } as const;
    const bulk = await redeliverMatching(stack.db.knex, lateGateway, OPERATOR, filter, { ...options, limit: 10 });
    assert.deepEqual(bulk, { started: 1, skipped_expired_links: 0, skipped_payload_removed: 0, more: false });
    const repeated = await redeliverMatching(stack.db.knex, lateGateway, OPERATOR, filter, { ...options, limit: 10 });
    assert.deepEqual(
      repeated,
      { started: 0, skipped_expired_links: 0, skipped_payload_removed: 0, more: false },
      'the same filters again start nothing',
    );
  });
});
