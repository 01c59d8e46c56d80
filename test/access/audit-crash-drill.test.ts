// The crash drill of the audit trail: `partner-service api` is SIGKILLed between a cancel's intent row and its
// outcome. The api reaches a real dev server through a TCP proxy that holds the cancel request, so the process
// dies while its call to Temporal is in flight. The trail keeps the intent, `audit list --unsettled` shows it
// with no outcome, and the chain still verifies.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import candidateNew from '../fixtures/events/candidate-new-short.json';
import { submitWebhook } from '../support/api';
import { runCli } from '../support/cli';
import { eventually } from '../support/eventually';
import { useProxiedService } from '../support/proxied-service';
import { answer } from '../support/partner-server';
import { INTERNAL_TOKEN } from '../support/tokens';

describe('audit crash drill: the api killed between a cancel intent and its outcome', function () {
  this.timeout(180_000);
  // Every attempt fails, so the delivery waits 10 s, then 100 s: pending long enough to cancel.
  const { processes, service } = useProxiedService('audit-crash-drill', answer(503), {
    INTERNAL_API_TOKEN: INTERNAL_TOKEN,
  });

  it('keeps the intent row, which audit list shows without an outcome, and the chain verifies', async () => {
    const { fixtures, proxy } = service();
    const queue = `audit-crash-${randomUUID()}`;
    await processes.startWorker(queue);
    const api = await processes.startApi(queue, { TEMPORAL_ADDRESS: `127.0.0.1:${proxy.port}` });
    const { db } = fixtures;
    const { webhook_id: webhookId } = await submitWebhook(api, INTERNAL_TOKEN, {
      ...candidateNew,
      event_id: `crash-${randomUUID()}`,
    });
    await eventually(
      'the first attempt failed',
      async () => (await db.knex('webhook_attempts').where({ webhook_id: webhookId })).length === 1,
    );

    // Requests to Temporal are held from now on: the cancel writes its intent, then waits on its call.
    proxy.delay({ toServer: 120_000 });
    const cancel = fetch(`${api}/internal/v1/webhooks/${webhookId}/cancel`, {
      method: 'POST',
      headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'x-request-id': 'crash-drill-cancel' },
    }).catch((error: unknown) => error);
    await eventually(
      'the intent row',
      async () => (await db.knex('audit_events').where({ action: 'webhook.cancel', phase: 'intent' })).length === 1,
      10_000,
    );
    const [apiProcess] = processes.children().filter((child) => child.spawnargs.includes('api'));
    await processes.kill(apiProcess);
    assert.ok((await cancel) instanceof Error, 'the cancel got no answer: its process died');
    proxy.delay({ toServer: 0 });

    const rows = await db
      .knex('audit_events')
      .where({ action: 'webhook.cancel' })
      .select('phase', 'outcome', 'target', 'actor', 'request_id', 'operation_id');
    assert.equal(rows.length, 1, 'no outcome row');
    assert.deepEqual(
      { ...rows[0], operation_id: undefined },
      {
        phase: 'intent',
        outcome: null,
        target: webhookId,
        actor: 'INTERNAL_API_TOKEN',
        request_id: 'crash-drill-cancel',
        operation_id: undefined,
      },
    );
    const env = { ...processes.common(queue), LOG_LEVEL: 'error' };
    const unsettled = await runCli(['audit', 'list', '--unsettled'], env);
    assert.equal(unsettled.code, 0, unsettled.stderr);
    const listed = JSON.parse(unsettled.stdout) as { results: Array<Record<string, unknown>> };
    assert.deepEqual(
      listed.results.map((r) => [r.action, r.target, r.phase, r.outcome, r.outcome_recorded, r.operation_id]),
      [['webhook.cancel', webhookId, 'intent', null, false, rows[0].operation_id]],
    );
    const verified = await runCli(['audit', 'verify'], env);
    assert.equal(verified.code, 0, verified.stdout);
    assert.equal(JSON.parse(verified.stdout).rows, 1);
  });
});
