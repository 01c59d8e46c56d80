// The delivery worker's slots on a real dev server: a first attempt holds its workflow task's slot for its
// whole POST, so PARTNER_MAX_CONCURRENCY above the old fixed 40 workflow-task slots must still be reached.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import { loadConfig } from '../../lib/config';
import { SHORT_TASK_SLOTS, workflowTaskSlots } from '../../worker/worker-options';
import candidateNew from '../fixtures/events/candidate-new.json';
import { withOwnEntity } from '../support/own-entity';
import { eventually } from '../support/eventually';
import { startWebhookStack, type WebhookStack } from '../support/webhook-stack';
import { postWebhook } from '../support/api';

const ATTEMPT_SLOTS = 60;

describe('delivery worker slots', function () {
  this.timeout(120_000);
  let stack: WebhookStack;
  /** POSTs the partner holds unanswered until the test releases them. */
  const held: http.ServerResponse[] = [];

  before(async () => {
    stack = await startWebhookStack({
      env: {
        PARTNER_MAX_CONCURRENCY: String(ATTEMPT_SLOTS),
        PARTNER_MAX_PER_SECOND: '1000',
        PARTNER_TIMEOUT_MS: '60000',
      },
      partnerHandler: (_req, res) => held.push(res),
    });
  });

  after(async () => {
    for (const res of held.splice(0)) res.writeHead(204).end();
    await stack?.close();
  });

  it('gives every attempt slot a workflow-task slot, plus the short tasks, unless WORKER_WORKFLOW_TASK_SLOTS says otherwise', () => {
    assert.equal(workflowTaskSlots(loadConfig({})), 10 + SHORT_TASK_SLOTS);
    assert.equal(workflowTaskSlots(loadConfig({ PARTNER_MAX_CONCURRENCY: '200' })), 240);
    assert.equal(workflowTaskSlots(loadConfig({ PARTNER_MAX_CONCURRENCY: '200', WORKER_WORKFLOW_TASK_SLOTS: '5' })), 5);
  });

  it(`holds ${ATTEMPT_SLOTS} first attempts open at once with PARTNER_MAX_CONCURRENCY=${ATTEMPT_SLOTS}, and no more`, async () => {
    const { api, config, db } = stack;
    const submitted = Array.from({ length: ATTEMPT_SLOTS + 5 }, () =>
      withOwnEntity({ ...candidateNew, event_id: `slots-${randomUUID()}` }),
    );
    const statuses = await Promise.all(
      submitted.map(async (event) => {
        const response = await postWebhook(api.url, config.INTERNAL_API_TOKEN, event);
        return response.status;
      }),
    );
    assert.deepEqual(new Set(statuses), new Set([202]));
    await eventually(`${ATTEMPT_SLOTS} POSTs held open at once`, async () => held.length === ATTEMPT_SLOTS, 30_000);
    // The partner's cap holds: five more wait in Temporal until a slot frees.
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(held.length, ATTEMPT_SLOTS);
    for (const res of held.splice(0)) res.writeHead(204).end();
    await eventually('the last five POSTed', async () => held.length === 5, 30_000);
    for (const res of held.splice(0)) res.writeHead(204).end();
    const ids = submitted.map((event) => event.event_id);
    await eventually(
      'every webhook delivered',
      async () =>
        (await db.knex('webhook_events').whereIn('event_id', ids).where({ status: 'delivered' }).count({ n: '*' }))[0]
          .n == submitted.length,
      30_000,
    );
  });
});
