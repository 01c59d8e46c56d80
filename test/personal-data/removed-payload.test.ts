// A webhook whose body the retention purge removed, through the real internal API, the CLI and a dev server:
// its status says so, a redelivery of it is refused with 409 and why, and a bulk redelivery skips and counts it.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { removeDueBodies } from '../../store/personal-data/retention-purge';
import candidateNew from '../fixtures/events/candidate-new.json';
import { runCli } from '../support/cli';
import { startWebhookStack, type WebhookStack } from '../support/webhook-stack';
import { INTERNAL_TOKEN } from '../support/tokens';

const DAY = 86_400_000;

describe('a webhook whose body the retention purge removed', function () {
  this.timeout(120_000);
  let stack: WebhookStack;
  const company = `removed-${randomUUID().slice(0, 8)}`;
  const ids = { removed: '', kept: '' };
  let removedAt: Date;

  const call = async (method: 'GET' | 'POST', path: string, body?: unknown) => {
    const response = await fetch(`${stack.api.url}/internal/v1/webhooks${path}`, {
      method,
      headers: {
        authorization: `Bearer ${INTERNAL_TOKEN}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return {
      status: response.status,
      type: response.headers.get('content-type'),
      body: (await response.json()) as Record<string, any>,
    };
  };
  const cli = (args: string[]) =>
    runCli(args, {
      PATH: process.env.PATH,
      DATABASE_URL: stack.db.url,
      TEMPORAL_ADDRESS: stack.server.address,
      TEMPORAL_TASK_QUEUE: stack.config.TEMPORAL_TASK_QUEUE,
    });

  before(async () => {
    stack = await startWebhookStack({ env: { INTERNAL_API_TOKEN: INTERNAL_TOKEN } });
    for (const key of ['removed', 'kept'] as const) {
      const event = { ...structuredClone(candidateNew), event_id: `removed-${randomUUID()}` };
      event.data.company.id = company;
      const accepted = await call('POST', '', event);
      assert.equal(accepted.status, 202);
      await stack.client.workflow.getHandle(accepted.body.workflow_id).result();
      ids[key] = accepted.body.webhook_id;
    }
    // One finished 31 days ago: past the default 30 days of payload retention; the purge runs at its cutoff.
    await stack.db
      .knex('webhook_events')
      .where({ id: ids.removed })
      .update({ finished_at: new Date(Date.now() - 31 * DAY) });
    removedAt = new Date(Math.floor(Date.now() / 1000) * 1000);
    assert.equal(await removeDueBodies(stack.db.knex, new Date(Date.now() - 30 * DAY), removedAt), 1);
  });

  after(() => stack?.close());

  const reason = () =>
    `Webhook ${ids.removed} has no body to deliver: it was removed by retention at ${removedAt.toISOString()}.`;

  it('says so in the status URL and in `webhooks show`: payload_removed_at and its reason, no event, attempts kept', async () => {
    const status = await call('GET', `/${ids.removed}`);
    assert.equal(status.status, 200);
    assert.deepEqual(
      {
        status: status.body.status,
        payload_removed_at: status.body.payload_removed_at,
        payload_removed_reason: status.body.payload_removed_reason,
        event: status.body.event,
      },
      {
        status: 'delivered',
        payload_removed_at: removedAt.toISOString(),
        payload_removed_reason: 'retention',
        event: null,
      },
    );
    assert.deepEqual(
      status.body.attempts.map((a: { attempt: number; http_status: number }) => [a.attempt, a.http_status]),
      [[1, 200]],
    );
    const shown = await cli(['webhooks', 'show', ids.removed]);
    assert.deepEqual([shown.code, shown.stderr], [0, '']);
    const view = JSON.parse(shown.stdout);
    assert.deepEqual(
      [view.payload_removed_at, view.payload_removed_reason, view.event],
      [removedAt.toISOString(), 'retention', null],
    );
    const kept = await call('GET', `/${ids.kept}`);
    assert.deepEqual(
      [kept.body.payload_removed_at, kept.body.payload_removed_reason, kept.body.event.event_type],
      [null, null, 'candidate'],
    );
  });

  it("refuses its redelivery with 409 in the internal API's error format, and the CLI exits 1 with the reason", async () => {
    const refused = await call('POST', `/${ids.removed}/redeliver`);
    assert.deepEqual({ status: refused.status, body: refused.body }, { status: 409, body: { detail: reason() } });
    const cliRefused = await cli(['webhooks', 'redeliver', ids.removed]);
    assert.deepEqual([cliRefused.code, cliRefused.stdout, cliRefused.stderr], [1, '', `${reason()}\n`]);
    assert.equal(
      await stack.db
        .knex('webhook_events')
        .where({ redelivery_of: ids.removed })
        .count({ n: '*' })
        .first()
        .then((r) => Number(r!.n)),
      0,
    );
  });

  it('a bulk redelivery skips and counts it, and redelivers the rest', async () => {
    const bulk = await call('POST', '/redeliver', { company_id: company, status: 'delivered' });
    assert.deepEqual(
      { status: bulk.status, body: bulk.body },
      { status: 200, body: { started: 1, skipped_expired_links: 0, skipped_payload_removed: 1, more: false } },
    );
    const redeliveries = await stack.db
      .knex('webhook_events')
      .whereIn('redelivery_of', [ids.removed, ids.kept])
      .select('redelivery_of');
    assert.deepEqual(redeliveries, [{ redelivery_of: ids.kept }]);
  });
});
