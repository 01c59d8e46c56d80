// GET /partner/v1/webhooks/{webhook_id} and …/body on the real API and PostgreSQL: one answer for every webhook the app
// may not see, the attempts in the partner's words, the explanation read from the rows, the exact body or 410.
import assert from 'node:assert/strict';
import { loadConfig } from '../../lib/config';
import { removeDueBodies } from '../../store/personal-data/retention-purge';
import type { TestApi } from '../support/api';
import { call, partnerCall } from './support';
import {
  documented,
  minutesAgo,
  seedAttempt,
  seedLane,
  seedWebhook,
  startReadApi,
  type SeededWebhook,
} from './delivery-rows';

const DAY = 86_400_000;

describe('partner API: one webhook, why, and its body', () => {
  let stack: TestApi;
  let base: string;
  let headers: Record<string, string>;
  const rows: Record<string, SeededWebhook> = {};
  const times = { first: minutesAgo(10), second: minutesAgo(9), erased: minutesAgo(4) };
  const taskQueue = loadConfig({}).TEMPORAL_TASK_QUEUE;

  before(async () => {
    ({ stack, base, headers } = await startReadApi(['acme', 'initech'], 'detail-app', ['acme']));
    const { knex } = stack.db;
    rows.delivered = await seedWebhook(knex, 'acme', minutesAgo(10), {
      status: 'delivered',
      finished_at: minutesAgo(9),
    });
    await seedAttempt(knex, rows.delivered.id, 1, {
      startedAt: times.first,
      durationMs: 120,
      errorClass: 'connection_refused',
    });
    await seedAttempt(knex, rows.delivered.id, 2, {
      startedAt: times.second,
      durationMs: 35,
      httpStatus: 200,
      excerpt: 'thanks',
    });
    rows.failed = await seedWebhook(knex, 'acme', minutesAgo(8), { status: 'failed', finished_at: minutesAgo(1) });
    await seedAttempt(knex, rows.failed.id, 1, {
      startedAt: minutesAgo(8),
      durationMs: 5,
      httpStatus: 500,
      excerpt: 'boom',
    });
    rows.other = await seedWebhook(knex, 'initech', minutesAgo(7), { status: 'delivered', finished_at: minutesAgo(7) });
    rows.retained = await seedWebhook(knex, 'acme', minutesAgo(6), {
      status: 'delivered',
      finished_at: new Date(Date.now() - 31 * DAY),
    });
    rows.erased = await seedWebhook(knex, 'acme', minutesAgo(5), { status: 'cancelled', finished_at: minutesAgo(5) });
    await knex('webhook_events').where({ id: rows.erased.id }).update({
      status_reason: 'erasure',
      payload_removed_reason: 'erasure',
      payload_removed_at: times.erased,
      body: null,
    });
    assert.equal(await removeDueBodies(knex, new Date(Date.now() - 30 * DAY), minutesAgo(3)), 1);
    // Two webhooks of one key: the later one is queued behind the earlier, which the gate holds.
    rows.head = await seedWebhook(knex, 'acme', minutesAgo(2), { held_since: minutesAgo(2), held_queue: taskQueue });
    rows.queued = await seedWebhook(knex, 'acme', minutesAgo(1));
    await seedLane(knex, 'candidate-42', [rows.head.id, rows.queued.id]);
  });
  after(async () => stack.close());

  const get = async (path: string) => {
    const reply = await partnerCall(base, headers, 'GET', path);
    documented(
      path.endsWith('/body') ? '/partner/v1/webhooks/{webhook_id}/body' : '/partner/v1/webhooks/{webhook_id}',
      'get',
      reply,
    );
    return reply;
  };

  it("answers another company's webhook, an unknown id and a non-UUID with one identical 404", async () => {
    const unknown = '6f1c2a7e-0d4b-4c39-9a55-6a0f3e2b9c11';
    for (const id of [rows.other.id, unknown, 'not-a-uuid', rows.other.id.toUpperCase()]) {
      for (const path of [`/webhooks/${id}`, `/webhooks/${id}/body`]) {
        const reply = await partnerCall(base, headers, 'GET', path);
        assert.equal(reply.status, 404, path);
        assert.equal(reply.text, '{"detail":"Not found."}');
      }
    }
  });

  it('shows a delivered webhook with every attempt in the partner words', async () => {
    const reply = await get(`/webhooks/${rows.delivered.id}`);
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.body.attempts, [
      {
        number: 1,
        started_at: times.first.toISOString(),
        duration_ms: 120,
        http_status: null,
        error_class: 'connect',
        response_excerpt: null,
      },
      {
        number: 2,
        started_at: times.second.toISOString(),
        duration_ms: 35,
        http_status: 200,
        error_class: null,
        response_excerpt: 'thanks',
      },
    ]);
    assert.equal(reply.body.status, 'delivered');
    assert.equal(reply.body.explanation.code, 'delivered');
    assert.match(reply.body.explanation.text, /^Delivered: attempt 2 \(.*\) got HTTP 200\.$/);
    assert.equal(reply.body.next_attempt_at, null);
    assert.equal(reply.body.ordering_key, null);
  });

  it('explains failed, payload_removed and erased from the rows', async () => {
    const failed = await get(`/webhooks/${rows.failed.id}`);
    assert.deepEqual([failed.body.explanation.code, failed.body.attempts[0].error_class], ['failed', 'http']);
    const retained = await get(`/webhooks/${rows.retained.id}`);
    assert.equal(retained.body.explanation.code, 'payload_removed');
    assert.match(retained.body.explanation.text, /Retention removed its body at/);
    const erased = await get(`/webhooks/${rows.erased.id}`);
    assert.equal(erased.body.explanation.code, 'erased');
  });

  it('explains a queued webhook by the one ahead of it, with its key and sequence', async () => {
    const queued = await get(`/webhooks/${rows.queued.id}`);
    assert.equal(queued.status, 200);
    assert.deepEqual(
      [queued.body.ordering_key, queued.body.sequence, queued.body.explanation.code],
      ['candidate-42', 2, 'queued_behind'],
    );
    assert.ok(queued.body.explanation.text.includes(rows.head.id));
  });

  it('explains a held webhook by who paused the gate, from its columns', async () => {
    const { knex } = stack.db;
    await knex('partner_gate').insert({ task_queue: taskQueue }).onConflict('task_queue').ignore();
    await knex('partner_gate').update({
      partner_paused_at: new Date(),
      partner_pause_reason: 'deploy',
      partner_paused_by: 'app:detail-app',
    });
    assert.equal((await get(`/webhooks/${rows.head.id}`)).body.explanation.code, 'paused_by_partner');
    await knex('partner_gate').update({ paused_at: new Date(), pause_reason: 'maintenance' });
    const held = await get(`/webhooks/${rows.head.id}`);
    assert.deepEqual([held.body.status, held.body.explanation.code], ['held', 'paused_by_operator']);
    await knex('partner_gate').update({
      paused_at: null,
      pause_reason: null,
      partner_paused_at: null,
      partner_pause_reason: null,
      partner_paused_by: null,
    });
  });

  it('gives the exact bytes sent, or 410 once retention or an erasure removed them', async () => {
    const body = await call(`${base}/partner/v1/webhooks/${rows.delivered.id}/body`, { headers });
    assert.equal(body.status, 200);
    assert.equal(body.headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(body.text, rows.delivered.body);
    const retained = await get(`/webhooks/${rows.retained.id}/body`);
    assert.equal(retained.status, 410);
    assert.equal(retained.body.reason, 'payload_removed');
    assert.match(retained.body.detail, /^The body of this webhook was removed by retention at .*Z\.$/);
    const erased = await get(`/webhooks/${rows.erased.id}/body`);
    assert.equal(erased.status, 410);
    assert.deepEqual(erased.body, {
      detail: `The body of this webhook was removed by an erasure at ${times.erased.toISOString()}.`,
      reason: 'erased',
    });
  });
});
