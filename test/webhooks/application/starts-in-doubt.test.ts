import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startApiServer, type ApiServer } from '../../../api/server';
import { prepareWebhook, type PreparedWebhook } from '../../../application/start-webhook';
import { countStartsInDoubt, resolveStartsInDoubt } from '../../../application/start-resolution';
import { createTemporalGateway, type TemporalGateway } from '../../../application/temporal-gateway';
import { createLogger } from '../../../lib/logger';
import { metricsText } from '../../../lib/metrics';
import { claimEvent, insertWebhook } from '../../../store/webhook-ingestion';
import { postWebhook } from '../../support/api';
import { IN_CLEAR } from '../../support/at-rest';
import { eventually } from '../../support/eventually';
import { sample } from '../../support/metrics-text';
import { startWebhookStack, type WebhookStack } from '../../support/webhook-stack';
import jobNew from '../../fixtures/events/job-new.json';
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
    assert.equal((await claimEvent(stack.db.knex, IN_CLEAR, { ...webhook, event: webhook.input.event, runId: null, isTest: false })).kind, 'start');
    await stack.db.knex('webhook_events').where({ id: webhook.webhookId }).update({ created_at: stack.db.knex.raw(`now() - make_interval(secs => ?)`, [ageSeconds]) });
  };
  const row = (webhook: PreparedWebhook) => stack.db.knex('webhook_events').where({ id: webhook.webhookId }).first('run_id', 'start_reported', 'status');
  const resolutions = async () => {
    const text = await metricsText();
    return { recorded: sample(text, 'partner_service_webhook_start_resolutions_total{outcome="recorded"}'), removed: sample(text, 'partner_service_webhook_start_resolutions_total{outcome="removed"}') };
  };
  const deps = (gateway: TemporalGateway) => ({ knex: stack.db.knex, logger, doubtSeconds: DOUBT_SECONDS, gateway });

  it('records a run Temporal has, removes a row it has none for, once across two workers, and leaves young rows and test sends alone', async () => {
    const started = newJob();
    const neverStarted = newJob();
    const young = newJob();
    const testSend = newJob();
    // Its workflow exists on a queue no worker polls, so no claim records the run before the lookup does.
    const handle = await stack.client.workflow.start('deliverWebhook', { workflowId: started.workflowId, taskQueue: `no-worker-${randomUUID()}`, args: [started.input] });
    await storeWithoutRun(started, 2 * DOUBT_SECONDS);
    await storeWithoutRun(neverStarted, DOUBT_SECONDS + 1);
    await storeWithoutRun(young, DOUBT_SECONDS - 10);
    await insertWebhook(stack.db.knex, IN_CLEAR, { ...testSend, workflowId: null, event: testSend.input.event, runId: null, isTest: true });
    await stack.db.knex('webhook_events').where({ id: testSend.webhookId }).update({ created_at: stack.db.knex.raw(`now() - interval '1 hour'`) });
    assert.equal(await countStartsInDoubt(stack.db.knex, DOUBT_SECONDS), 2);
    const before = await resolutions();

    const sweeps = await Promise.all([resolveStartsInDoubt(deps(stack.gateway)), resolveStartsInDoubt(deps(stack.gateway))]);

    const total = (key: 'recorded' | 'removed' | 'overtaken' | 'unresolved') => sweeps[0][key] + sweeps[1][key];
    assert.deepEqual({ recorded: total('recorded'), removed: total('removed'), overtaken: total('overtaken'), unresolved: total('unresolved') }, { recorded: 1, removed: 1, overtaken: 0, unresolved: 0 });
    assert.deepEqual(await row(started), { run_id: handle.firstExecutionRunId, start_reported: false, status: 'pending' });
    assert.equal(await row(neverStarted), undefined);
    assert.deepEqual(await row(young), { run_id: null, start_reported: false, status: 'pending' });
    assert.deepEqual(await row(testSend), { run_id: null, start_reported: false, status: 'pending' });
    assert.equal(await countStartsInDoubt(stack.db.knex, DOUBT_SECONDS), 0);
    const after = await resolutions();
    assert.deepEqual([after.recorded! - before.recorded!, after.removed! - before.removed!], [1, 1]);

    // The caller's retry with the same event_id answers as documented: 202, on the run Temporal had, or a new one.
    const api = await startApiServer({ config: stack.config, knex: stack.db.knex, logger, temporalGateway: stack.gateway }, 0, '127.0.0.1');
    try {
      const retry = async (webhook: PreparedWebhook) => {
        const response = await postWebhook(api.url, stack.config.INTERNAL_API_TOKEN, webhook.event);
        return { status: response.status, runId: ((await response.json()) as { run_id: string }).run_id };
      };
      assert.deepEqual(await retry(started), { status: 202, runId: handle.firstExecutionRunId });
      const again = await retry(neverStarted);
      assert.equal(again.status, 202);
      await eventually('the retried webhook to be delivered', async () => (await row(neverStarted))?.status === 'delivered');
    } finally {
      await api.close();
      await handle.terminate('test over');
    }
  });

  it('leaves a row whose lookup fails for the next look after the doubt window, not the next sweep', async () => {
    const unreachable = createTemporalGateway({ ...stack.config, temporal: { ...stack.config.temporal, address: `127.0.0.1:${await closedPort()}` } }, logger, { connectTimeoutMs: 500 });
    const webhook = newJob();
    await storeWithoutRun(webhook, DOUBT_SECONDS + 1);
    try {
      assert.deepEqual(await resolveStartsInDoubt(deps(unreachable)), { recorded: 0, removed: 0, overtaken: 0, unresolved: 1 });
      assert.deepEqual(await resolveStartsInDoubt(deps(stack.gateway)), { recorded: 0, removed: 0, overtaken: 0, unresolved: 0 }, 'taken within the window: not looked at again yet');
      assert.deepEqual(await row(webhook), { run_id: null, start_reported: false, status: 'pending' });
      assert.equal(await countStartsInDoubt(stack.db.knex, DOUBT_SECONDS), 1, 'still counted in doubt');
      await stack.db.knex('webhook_events').where({ id: webhook.webhookId }).update({ start_checked_at: stack.db.knex.raw(`now() - interval '2 minutes'`) });
      assert.deepEqual(await resolveStartsInDoubt(deps(stack.gateway)), { recorded: 0, removed: 1, overtaken: 0, unresolved: 0 });
    } finally {
      await unreachable.close();
    }
  });
});

describe('admission: each api process bounds its starts in flight', function () {
  this.timeout(60_000);
  let stack: WebhookStack;
  let api: ApiServer;
  let openGate!: () => void;
  const BOUND = 3;

  before(async () => {
    stack = await startWebhookStack();
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    // The real gateway, whose starts wait until the test lets them go: the bound fills up and stays full.
    const gated: TemporalGateway = { ...stack.gateway, start: async (webhook) => gate.then(() => stack.gateway.start(webhook)) };
    api = await startApiServer({ config: { ...stack.config, INGEST_MAX_STARTS_IN_FLIGHT: BOUND }, knex: stack.db.knex, logger, temporalGateway: gated }, 0, '127.0.0.1');
  });
  after(async () => {
    openGate?.();
    await api?.close();
    await stack?.close();
  });

  const post = (body: unknown) => postWebhook(api.url, stack.config.INTERNAL_API_TOKEN, body);
  const rowCount = async () => Number((await stack.db.knex('webhook_events').count({ n: '*' }))[0].n);
  const refusedOverloaded = async () => sample(await (await fetch(`${api.url}/metrics`)).text(), 'partner_service_ingest_refusals_total{reason="overloaded"}')!;
  const inFlight = async () => sample(await (await fetch(`${api.url}/metrics`)).text(), 'partner_service_ingest_starts_in_flight')!;

  it('answers 503 overloaded at once past the bound, storing nothing; bad input is still 400; the same events are accepted later', async () => {
    const events = Array.from({ length: BOUND + 4 }, () => ({ ...jobNew, event_id: `job-new-${randomUUID()}` }));
    const refusedBefore = await refusedOverloaded();
    const admitted = events.slice(0, BOUND).map((event) => post(event));
    await eventually('the admitted starts to be stored and in flight', async () => (await rowCount()) === BOUND && (await inFlight()) === BOUND);

    // Answered while every admitted start is still held: nothing waits for a place.
    for (const event of events.slice(BOUND)) {
      const response = await post(event);
      assert.equal(response.status, 503);
      assert.equal(response.headers.get('retry-after'), '1');
      assert.deepEqual(await response.json(), {
        detail: `This api process already has ${BOUND} webhook starts in flight: nothing was stored. Retry after Retry-After with the same event_id.`,
        reason: 'overloaded',
      });
    }
    const bad = await post({ ...jobNew, event_type: 'nope' });
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as { detail: string }).detail, 'Invalid webhook event.');
    assert.equal(await rowCount(), BOUND, 'nothing stored for the refused ones');
    assert.equal((await refusedOverloaded()) - refusedBefore, 4);

    openGate();
    assert.deepEqual((await Promise.all(admitted)).map((r) => r.status), Array(BOUND).fill(202));
    assert.equal(await inFlight(), 0);
    for (const event of events.slice(BOUND)) assert.equal((await post(event)).status, 202, 'the retry with the same event_id is accepted');
    assert.equal(await rowCount(), events.length);
  });
});
