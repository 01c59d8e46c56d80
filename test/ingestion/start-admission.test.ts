import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startApiServer, type ApiServer } from '../../api/server';
import type { TemporalGateway } from '../../temporal/gateway';
import { createLogger } from '../../lib/logger';
import { postWebhook } from '../support/api';
import { eventually } from '../support/eventually';
import { sample } from '../support/metrics-text';
import { startWebhookStack, type WebhookStack } from '../support/webhook-stack';
import jobNew from '../fixtures/events/job-new.json';

const logger = createLogger('silent');

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
    const gated: TemporalGateway = {
      ...stack.gateway,
      start: async (webhook) => gate.then(() => stack.gateway.start(webhook)),
    };
    api = await startApiServer(
      {
        config: { ...stack.config, INGEST_MAX_STARTS_IN_FLIGHT: BOUND },
        knex: stack.db.knex,
        logger,
        temporalGateway: gated,
      },
      0,
      '127.0.0.1',
    );
  });
  after(async () => {
    openGate?.();
    await api?.close();
    await stack?.close();
  });

  const post = (body: unknown) => postWebhook(api.url, stack.config.INTERNAL_API_TOKEN, body);
  const rowCount = async () => Number((await stack.db.knex('webhook_events').count({ n: '*' }))[0].n);
  const refusedOverloaded = async () =>
    sample(
      await (await fetch(`${api.url}/metrics`)).text(),
      'partner_service_ingest_refusals_total{reason="overloaded"}',
    )!;
  const inFlight = async () =>
    sample(await (await fetch(`${api.url}/metrics`)).text(), 'partner_service_ingest_starts_in_flight')!;

  it('answers 503 overloaded at once past the bound, storing nothing; bad input is still 400; the same events are accepted later', async () => {
    const events = Array.from({ length: BOUND + 4 }, () => ({ ...jobNew, event_id: `job-new-${randomUUID()}` }));
    const refusedBefore = await refusedOverloaded();
    const admitted = events.slice(0, BOUND).map((event) => post(event));
    await eventually(
      'the admitted starts to be stored and in flight',
      async () => (await rowCount()) === BOUND && (await inFlight()) === BOUND,
    );

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
    assert.deepEqual(
      (await Promise.all(admitted)).map((r) => r.status),
      Array(BOUND).fill(202),
    );
    assert.equal(await inFlight(), 0);
    for (const event of events.slice(BOUND))
      assert.equal((await post(event)).status, 202, 'the retry with the same event_id is accepted');
    assert.equal(await rowCount(), events.length);
  });
});
