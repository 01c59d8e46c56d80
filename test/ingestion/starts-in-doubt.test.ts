import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startApiServer } from '../../api/server';
import { prepareWebhook } from '../../application/ingestion/start-webhook';
import type { PreparedWebhook } from '../../temporal/delivery-start';
import { resolveStartsInDoubt } from '../../application/ingestion/start-resolution';
import { countStartsInDoubt } from '../../store/ingestion/starts-in-doubt';
import { createTemporalGateway, type TemporalGateway } from '../../temporal/gateway';
import { createLogger } from '../../lib/logger';
import { metricsText } from '../../lib/metrics';
import { claimEvent, insertWebhook } from '../../store/ingestion/webhook-ingestion';
import { postWebhook } from '../support/api';
import { IN_CLEAR } from '../support/at-rest';
import { eventually } from '../support/eventually';
import { sample } from '../support/metrics-text';
import { startWebhookStack, type WebhookStack } from '../support/webhook-stack';
import jobNew from '../fixtures/events/job-new.json';
import { closedPort } from '../support/partner-server';

const logger = createLogger('silent');
const DOUBT_SECONDS = 60;

describe('starts in doubt: each is looked up by its workflow id, then recorded or removed', function () {
  this.timeout(60_000);
  let stack: WebhookStack;
  before(async () => {
    stack = await startWebhookStack();
  });
  after(async () => {
    await stack?.close();
  });

  const newJob = (): PreparedWebhook => prepareWebhook({ ...jobNew, event_id: `job-new-${randomUUID()}` });
  /** A row as ingestion writes it before its start call, `ageSeconds` old, with no run. */
  const storeWithoutRun = async (webhook: PreparedWebhook, ageSeconds: number) => {
    assert.equal(
      (
        await claimEvent(stack.db.knex, IN_CLEAR, {
          ...webhook,
          event: webhook.input.event,
          runId: null,
          isTest: false,
        })
      ).kind,
      'start',
    );
    await stack.db
      .knex('webhook_events')
      .where({ id: webhook.webhookId })
      .update({ created_at: stack.db.knex.raw(`now() - make_interval(secs => ?)`, [ageSeconds]) });
  };
  const row = (webhook: PreparedWebhook) =>
    stack.db.knex('webhook_events').where({ id: webhook.webhookId }).first('run_id', 'start_reported', 'status');
  const resolutions = async () => {
    const text = await metricsText();
    return {
      recorded: sample(text, 'partner_service_webhook_start_resolutions_total{outcome="recorded"}'),
      removed: sample(text, 'partner_service_webhook_start_resolutions_total{outcome="removed"}'),
    };
  };
  const deps = (gateway: TemporalGateway) => ({ knex: stack.db.knex, logger, doubtSeconds: DOUBT_SECONDS, gateway });

  it('records a run Temporal has, removes a row it has none for, once across two workers, and leaves young rows and test sends alone', async () => {
    const started = newJob();
    const neverStarted = newJob();
    const young = newJob();
    const testSend = newJob();
    // Its workflow exists on a queue no worker polls, so no claim records the run before the lookup does.
    const handle = await stack.client.workflow.start('deliverWebhook', {
      workflowId: started.workflowId,
      taskQueue: `no-worker-${randomUUID()}`,
      args: [started.input],
    });
    await storeWithoutRun(started, 2 * DOUBT_SECONDS);
    await storeWithoutRun(neverStarted, DOUBT_SECONDS + 1);
    await storeWithoutRun(young, DOUBT_SECONDS - 10);
    await insertWebhook(stack.db.knex, IN_CLEAR, {
      ...testSend,
      workflowId: null,
      event: testSend.input.event,
      runId: null,
      isTest: true,
    });
    await stack.db
      .knex('webhook_events')
      .where({ id: testSend.webhookId })
      .update({ created_at: stack.db.knex.raw(`now() - interval '1 hour'`) });
    assert.equal(await countStartsInDoubt(stack.db.knex, DOUBT_SECONDS), 2);
    const before = await resolutions();

    const sweeps = await Promise.all([
      resolveStartsInDoubt(deps(stack.gateway)),
      resolveStartsInDoubt(deps(stack.gateway)),
    ]);

    const total = (key: 'recorded' | 'removed' | 'overtaken' | 'unresolved') => sweeps[0][key] + sweeps[1][key];
    assert.deepEqual(
      {
        recorded: total('recorded'),
        removed: total('removed'),
        overtaken: total('overtaken'),
        unresolved: total('unresolved'),
      },
      { recorded: 1, removed: 1, overtaken: 0, unresolved: 0 },
    );
    assert.deepEqual(await row(started), {
      run_id: handle.firstExecutionRunId,
      start_reported: false,
      status: 'pending',
    });
    assert.equal(await row(neverStarted), undefined);
    assert.deepEqual(await row(young), { run_id: null, start_reported: false, status: 'pending' });
    assert.deepEqual(await row(testSend), { run_id: null, start_reported: false, status: 'pending' });
    assert.equal(await countStartsInDoubt(stack.db.knex, DOUBT_SECONDS), 0);
    const after = await resolutions();
    assert.deepEqual([after.recorded! - before.recorded!, after.removed! - before.removed!], [1, 1]);

    // The caller's retry with the same event_id answers as documented: 202, on the run Temporal had, or a new one.
    const api = await startApiServer(
      { config: stack.config, knex: stack.db.knex, logger, temporalGateway: stack.gateway },
      0,
      '127.0.0.1',
    );
    try {
      const retry = async (webhook: PreparedWebhook) => {
        const response = await postWebhook(api.url, stack.config.INTERNAL_API_TOKEN, webhook.event);
        return { status: response.status, runId: ((await response.json()) as { run_id: string }).run_id };
      };
      assert.deepEqual(await retry(started), { status: 202, runId: handle.firstExecutionRunId });
      const again = await retry(neverStarted);
      assert.equal(again.status, 202);
      await eventually(
        'the retried webhook to be delivered',
        async () => (await row(neverStarted))?.status === 'delivered',
      );
    } finally {
      await api.close();
      await handle.terminate('test over');
    }
  });

  it('leaves a row whose lookup fails for the next look after the doubt window, not the next sweep', async () => {
    const unreachable = createTemporalGateway(
      { ...stack.config, temporal: { ...stack.config.temporal, address: `127.0.0.1:${await closedPort()}` } },
      logger,
      { connectTimeoutMs: 500 },
    );
    const webhook = newJob();
    await storeWithoutRun(webhook, DOUBT_SECONDS + 1);
    try {
      assert.deepEqual(await resolveStartsInDoubt(deps(unreachable)), {
        recorded: 0,
        removed: 0,
        overtaken: 0,
        unresolved: 1,
      });
      assert.deepEqual(
        await resolveStartsInDoubt(deps(stack.gateway)),
        { recorded: 0, removed: 0, overtaken: 0, unresolved: 0 },
        'taken within the window: not looked at again yet',
      );
      assert.deepEqual(await row(webhook), { run_id: null, start_reported: false, status: 'pending' });
      assert.equal(await countStartsInDoubt(stack.db.knex, DOUBT_SECONDS), 1, 'still counted in doubt');
      await stack.db
        .knex('webhook_events')
        .where({ id: webhook.webhookId })
        .update({ start_checked_at: stack.db.knex.raw(`now() - interval '2 minutes'`) });
      assert.deepEqual(await resolveStartsInDoubt(deps(stack.gateway)), {
        recorded: 0,
        removed: 1,
        overtaken: 0,
        unresolved: 0,
      });
    } finally {
      await unreachable.close();
    }
  });
});
