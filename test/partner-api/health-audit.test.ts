// GET /partner/v1/health and GET /partner/v1/audit on the real API and PostgreSQL: the figures equal what the
// seeded rows hold (computed here by hand), and the trail shows only the rows on the app's deliveries and the
// endpoint, each operator as `operator`.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { loadConfig } from '../../lib/config';
import { insertAuditEvent } from '../../store/access/audit';
import type { AuditAction } from '../../lib/vocabulary';
import type { TestApi } from '../support/api';
import { resetAuditTrail } from '../support/audit-trail';
import { partnerCall } from './support';
import { documented, minutesAgo, seedAttempt, seedLane, seedWebhook, startReadApi } from './delivery-rows';

describe('partner API: health and the audit trail', () => {
  let stack: TestApi;
  let base: string;
  let headers: Record<string, string>;
  const ids: Record<string, string> = {};

  before(async () => {
    ({ stack, base, headers } = await startReadApi(['acme', 'globex', 'initech'], 'health-app', ['acme', 'globex']));
    const { knex } = stack.db;
    // A: a 503 then a 200, both in the last hour.
    ids.a = (await seedWebhook(knex, 'acme', minutesAgo(11), { status: 'delivered', finished_at: minutesAgo(5) })).id;
    await seedAttempt(knex, ids.a, 1, { startedAt: minutesAgo(10), durationMs: 100, httpStatus: 503 });
    await seedAttempt(knex, ids.a, 2, { startedAt: minutesAgo(5), durationMs: 40, httpStatus: 200 });
    // B: refused (no answer), then a 500, 3 h and 2 h ago: failed finally 2 h ago.
    ids.b = (await seedWebhook(knex, 'globex', minutesAgo(181), { status: 'failed', finished_at: minutesAgo(120) })).id;
    await seedAttempt(knex, ids.b, 1, { startedAt: minutesAgo(180), durationMs: 3, errorClass: 'connection_refused' });
    await seedAttempt(knex, ids.b, 2, { startedAt: minutesAgo(120), durationMs: 900, httpStatus: 500 });
    // D: 30 h ago, outside both windows; E: another company's, in the last hour.
    ids.d = (
      await seedWebhook(knex, 'acme', minutesAgo(1801), { status: 'delivered', finished_at: minutesAgo(1800) })
    ).id;
    await seedAttempt(knex, ids.d, 1, { startedAt: minutesAgo(1800), durationMs: 7000, httpStatus: 200 });
    ids.e = (await seedWebhook(knex, 'initech', minutesAgo(10), { status: 'failed', finished_at: minutesAgo(9) })).id;
    await seedAttempt(knex, ids.e, 1, { startedAt: minutesAgo(10), durationMs: 1, httpStatus: 500 });
    // The backlog: C held (the oldest pending, 20 min), F the head of a key and G queued behind it.
    const taskQueue = loadConfig({}).TEMPORAL_TASK_QUEUE;
    ids.c = (
      await seedWebhook(knex, 'globex', minutesAgo(20), { held_since: minutesAgo(19), held_queue: taskQueue })
    ).id;
    ids.f = (await seedWebhook(knex, 'acme', minutesAgo(15))).id;
    ids.g = (await seedWebhook(knex, 'acme', minutesAgo(12))).id;
    await seedLane(knex, 'candidate-1', [ids.f, ids.g]);
    await seedWebhook(knex, 'initech', minutesAgo(300));
  });
  after(async () => stack.close());

  it('counts what the rows hold: attempts per window, answer times, the backlog', async () => {
    const reply = await partnerCall(base, headers, 'GET', '/health');
    assert.equal(reply.status, 200);
    documented('/partner/v1/health', 'get', reply);
    // Last hour: A1 (503, 100 ms) and A2 (200, 40 ms). Answered durations [40, 100]: nearest rank 50 % = 40.
    assert.deepEqual(reply.body.last_hour, {
      attempts: 2,
      delivered: 1,
      failed: 1,
      webhooks_failed: 0,
      success_rate: 0.5,
      answer_ms_p50: 40,
      answer_ms_p95: 100,
    });
    // 24 h: A1, A2, B1 (refused: no answer time), B2 (500, 900 ms). Answered [40, 100, 900]; B failed finally.
    assert.deepEqual(reply.body.last_24_hours, {
      attempts: 4,
      delivered: 1,
      failed: 3,
      webhooks_failed: 1,
      success_rate: 0.25,
      answer_ms_p50: 100,
      answer_ms_p95: 900,
    });
    const { oldest_pending_age_seconds: age, ...backlog } = reply.body.backlog;
    assert.deepEqual(backlog, { pending: 3, queued: 1, held: 1 });
    assert.ok(age >= 1200 && age < 1260, String(age));
    assert.deepEqual(reply.body.gate, {
      state: 'active',
      paused_by: null,
      since: null,
      retry_after_until: null,
      max_per_second: loadConfig({}).PARTNER_MAX_PER_SECOND,
    });
    assert.equal(reply.body.breaker.trips, 0);
  });

  it('lists the trail rows on its deliveries and the endpoint, an operator as `operator`, paged', async () => {
    const { knex } = stack.db;
    await resetAuditTrail(knex);
    const row = async (actor: string, action: AuditAction, target: string | null, parameters = {}) =>
      insertAuditEvent(knex, {
        operationId: randomUUID(),
        phase: 'outcome',
        actor,
        action,
        target,
        parameters,
        outcome: 'succeeded',
        error: null,
        requestId: 'req-1',
      });
    await row('cli:alice@ops-host-7', 'webhook.redeliver', ids.a, { allow_expired_links: false });
    await row('ops-token', 'webhook.cancel', ids.e); // another company's webhook: not shown
    await row('ops-token', 'webhook.retry_now', ids.b);
    await row('INTERNAL_API_TOKEN', 'partner.pause', 'webhooks', { reason: 'maintenance' });
    await row('app:other-app', 'endpoint.resume', 'webhooks');
    await row('cli:alice@ops-host-7', 'erasure.request', randomUUID(), { subject_kind: 'email', company_id: 'acme' });
    await row('cli:alice@ops-host-7', 'erasure.request', randomUUID(), {
      subject_kind: 'email',
      company_id: 'initech',
    });
    await row('cli:alice@ops-host-7', 'token.create', 'ops-token'); // not about deliveries
    await row('app:health-app', 'webhook.redeliver', 'not-a-webhook');
    await row('app:other-app', 'webhook.redeliver', ids.c);
    await row('app:other-app', 'webhook.redeliver', ids.e); // another app, another company: not shown

    const first = await partnerCall(base, headers, 'GET', '/audit?limit=4');
    assert.equal(first.status, 200);
    documented('/partner/v1/audit', 'get', first);
    const second = await partnerCall(base, headers, 'GET', first.body.next.slice(`${base}/partner/v1`.length));
    documented('/partner/v1/audit', 'get', second);
    assert.equal(second.body.next, null);
    const rows = [...first.body.results, ...second.body.results];
    assert.deepEqual(
      rows.map((r: any) => [r.actor, r.action, r.parameters]),
      [
        ['app:other-app', 'webhook.redeliver', {}],
        ['app:health-app', 'webhook.redeliver', {}],
        ['operator', 'erasure.request', { company_id: 'acme' }],
        ['app:other-app', 'endpoint.resume', {}],
        ['operator', 'partner.pause', { reason: 'maintenance' }],
        ['operator', 'webhook.retry_now', {}],
        ['operator', 'webhook.redeliver', { allow_expired_links: false }],
      ],
    );
    for (const r of rows) {
      assert.match(r.hash, /^[0-9a-f]{64}$/);
      assert.ok(Number.isInteger(r.seq) && r.seq > 0);
    }
    assert.ok(!JSON.stringify(rows).match(/alice|ops-host|ops-token|INTERNAL_API_TOKEN|email|req-1/));
    const windowed = await partnerCall(base, headers, 'GET', `/audit?until=${encodeURIComponent(rows[5].at)}`);
    assert.deepEqual(
      windowed.body.results.map((r: any) => r.seq),
      [rows[6].seq],
    );
    const bad = await partnerCall(base, headers, 'GET', '/audit?limit=101&cursor=zz');
    assert.equal(bad.status, 400);
    documented('/partner/v1/audit', 'get', bad);
    assert.deepEqual(bad.body.errors.map((e: any) => e.path).sort(), ['limit']);
  });
});
