// Every head of an ordering key settles, on a real `temporal server start-dev` with the service's worker and a
// partner on loopback: a head whose run completed without settling its place (every claim rejected by
// PostgreSQL) is settled by the sweep, by `ordering skip` and by a cancel; an erased head whose attempt is in
// flight holds its key until that attempt is over; a retried event_id that brings another ordering_key sends
// its first acceptance's key on every attempt.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { ApiServer } from '../../api/server';
import jobNew from '../fixtures/events/job-new.json';
import candidateNew from '../fixtures/events/candidate-new.json';
import type { TestDatabase } from '../support/database';
import { eventually } from '../support/eventually';
import { postWebhook } from '../support/api';
import { orderingPartnerHandler, type OrderingArrival } from '../support/ordering-partner';
import { startWebhookStack, type WebhookStack } from '../support/webhook-stack';
import { webhookStatusQuery } from '../../workflows/webhooks/messages';
import { sweepOrdering } from '../../application/ordering/ordering-sweep';
import { createLogger } from '../../lib/logger';
import { webhookIds } from '../../application/ingestion/ids';
import { dataAtRest } from '../../lib/at-rest';
import { claimEvent } from '../../store/ingestion/webhook-ingestion';
import { eraseSubjectWebhooks } from '../../store/personal-data/erasure-steps';
import { storeEndOfRun } from '../../store/webhooks/attempt-record';
import { toEnvelope, type WebhookEventInput } from '../../events/envelope';
import { INTERNAL_TOKEN } from '../support/tokens';

const logger = createLogger('silent');

describe('every head of an ordering key settles (dev server, WEBHOOK_ORDERING=entity)', function () {
  this.timeout(180_000);
  let stack: WebhookStack;
  let db: TestDatabase;
  let api: ApiServer;
  let client: Client;
  const arrivals: OrderingArrival[] = [];
  /** The partner's answer to one POST, and how long it takes, by webhook-id and the number of POSTs of it so far. */
  let answerFor: (webhookId: string, tries: number) => { status: number; delayMs?: number } = () => ({ status: 204 });
  const tries = new Map<string, number>();

  before(async () => {
    stack = await startWebhookStack({
      env: {
        INTERNAL_API_TOKEN: INTERNAL_TOKEN,
        WEBHOOK_ORDERING: 'entity',
        PARTNER_TIMEOUT_MS: '5000',
        PARTNER_BREAKER_FAILURES: '10000',
      },
      // 10 s, 100 s and 1000 s become 10, 100 and 1000 ms.
      compressTimers: true,
      partnerHandler: orderingPartnerHandler(arrivals, tries, (webhookId, n) => ({
        delayMs: 2,
        ...answerFor(webhookId, n),
      })),
    });
    ({ db, api, client } = stack);
    // A claim of a webhook listed here is rejected for good by PostgreSQL (SQLSTATE 23514), as a claim whose row
    // PostgreSQL refuses would be: the attempt is lost unsent, and the run completes without recording its end.
    await db.knex.raw(`
      CREATE TABLE test_rejected_claims (webhook_id uuid PRIMARY KEY);
      CREATE FUNCTION test_reject_claim() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF EXISTS (SELECT 1 FROM test_rejected_claims WHERE webhook_id = NEW.id) THEN
          RAISE EXCEPTION 'claim rejected by the test' USING ERRCODE = 'check_violation';
        END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER test_reject_claim BEFORE UPDATE ON webhook_events FOR EACH ROW
        WHEN (NEW.claimed_attempt > OLD.claimed_attempt) EXECUTE FUNCTION test_reject_claim();`);
  });

  after(() => stack?.close());

  beforeEach(() => {
    arrivals.length = 0;
    tries.clear();
    answerFor = () => ({ status: 204 });
  });

  const post = async (body: unknown) => {
    const response = await postWebhook(api.url, INTERNAL_TOKEN, body);
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${api.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json' },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : null };
  };
  const jobEvent = (jobId: string, action = 'update') =>
    ({
      ...structuredClone(jobNew),
      action,
      event_id: `heads-${randomUUID()}`,
      data: { ...structuredClone(jobNew.data), job: { ...jobNew.data.job, id: jobId } },
    }) as WebhookEventInput & { event_id: string };
  const placeOfRow = async (webhookId: string) =>
    (
      await db.knex.raw(
        `SELECT w.status, p.settled_at IS NOT NULL AS settled, p.gap, l.gaps::int AS gaps
           FROM webhook_events w JOIN ordering_places p ON p.webhook_id = w.id JOIN ordering_lanes l ON l.id = p.lane_id WHERE w.id = ?`,
        [webhookId],
      )
    ).rows[0] as { status: string; settled: boolean; gap: boolean; gaps: number };

  /**
   * A key whose head's run completed without settling its place: each of its four claims was rejected, so it
   * sent nothing and recorded nothing. A second webhook of the key waits behind it.
   */
  const headCompletedUnsettled = async () => {
    const jobId = `j-${randomUUID()}`;
    const headEvent = jobEvent(jobId, 'new');
    const headId = webhookIds(headEvent).webhookId;
    await db.knex('test_rejected_claims').insert({ webhook_id: headId });
    const first = await post(headEvent);
    assert.equal(first.status, 202);
    const second = await post(jobEvent(jobId));
    assert.equal(second.status, 202);
    const secondId = String(second.body.webhook_id);
    const queued = client.workflow.getHandle(String(second.body.workflow_id));
    await eventually(
      'the second webhook queued',
      async () => (await queued.query(webhookStatusQuery)).state === 'queued',
      30_000,
    );
    const head = client.workflow.getHandle(String(first.body.workflow_id));
    assert.equal(((await head.result()) as { status: string }).status, 'failed');
    assert.equal((await head.describe()).status.name, 'COMPLETED');
    // Without a settle, the key waits for ever: the row pending, its place open, the next still queued.
    assert.deepEqual(await placeOfRow(headId), { status: 'pending', settled: false, gap: false, gaps: 0 });
    assert.equal((await queued.query(webhookStatusQuery)).state, 'queued');
    return { key: `job:${jobId}`, headId, secondId };
  };
  const delivered = (webhookId: string) =>
    eventually(
      `webhook ${webhookId} delivered`,
      async () => arrivals.some((a) => a.webhookId === webhookId && a.status === 204),
      30_000,
    );

  it('the sweep settles a head whose run COMPLETED without settling: failed, one gap, and the next goes', async () => {
    const { headId, secondId } = await headCompletedUnsettled();
    assert.deepEqual(await sweepOrdering({ knex: db.knex, logger, gateway: stack.gateway }, 0), {
      settled: 1,
      woken: 1,
    });
    await delivered(secondId);
    assert.equal(arrivals.find((a) => a.webhookId === secondId)!.sequence, 2);
    assert.deepEqual(await placeOfRow(headId), { status: 'failed', settled: true, gap: true, gaps: 1 });
    assert.ok(!arrivals.some((a) => a.webhookId === headId), 'the head sent nothing');
    // A second pass finds nothing more to settle, and counts no second gap.
    assert.deepEqual(await sweepOrdering({ knex: db.knex, logger, gateway: stack.gateway }, 0), {
      settled: 0,
      woken: 0,
    });
    assert.equal((await placeOfRow(headId)).gaps, 1);
  });

  it('`ordering skip` settles such a head (200), `retry` refuses it (409), and the next goes', async () => {
    const { key, headId, secondId } = await headCompletedUnsettled();
    const retry = await call('POST', '/internal/v1/ordering/retry', { key });
    assert.equal(retry.status, 409);
    assert.deepEqual(retry.body, {
      detail: `The key is not blocked: its head, webhook ${headId}, has not failed finally.`,
    });
    assert.deepEqual(await call('POST', '/internal/v1/ordering/skip', { key }), {
      status: 200,
      body: { key, webhook_id: headId, decision: 'skip' },
    });
    await delivered(secondId);
    assert.deepEqual(await placeOfRow(headId), { status: 'failed', settled: true, gap: true, gaps: 1 });
    const again = await call('POST', '/internal/v1/ordering/skip', { key });
    assert.deepEqual(again, {
      status: 409,
      body: { detail: 'The key is not blocked: every webhook of it has settled.' },
    });
  });

  it('a cancel of such a head (Temporal takes a cancel of a closed run) records its end and lets the next go', async () => {
    const { headId, secondId } = await headCompletedUnsettled();
    const cancel = await call('POST', `/internal/v1/webhooks/${headId}/cancel`);
    assert.equal(cancel.status, 202, JSON.stringify(cancel.body));
    await delivered(secondId);
    assert.deepEqual(await placeOfRow(headId), { status: 'failed', settled: true, gap: true, gaps: 1 });
  });

  it('records the end of a run that ended on its own from its attempts, and keeps a status already recorded', async () => {
    const event = jobEvent(`j-${randomUUID()}`, 'new');
    const { webhookId, workflowId } = webhookIds(event);
    const atRest = dataAtRest(stack.config);
    const row = (id: string) => ({
      webhookId: id,
      eventId: `e-${id}`,
      workflowId: `wf-${id}`,
      runId: null,
      isTest: false,
    });
    await claimEvent(db.knex, atRest, {
      ...row(webhookId),
      workflowId,
      event: toEnvelope(event),
      orderingKey: 'k-ended',
    });
    await db.knex('webhook_attempts').insert({
      webhook_id: webhookId,
      attempt: 1,
      started_at: new Date(),
      duration_ms: 5,
      http_status: 204,
      succeeded: true,
      scheduled_at: new Date(),
    });
    const closedAt = new Date().toISOString();
    assert.equal(
      await storeEndOfRun(db.knex, { webhookId, workflowId, runId: 'run-1' }, undefined, closedAt),
      'delivered',
      'a run that completed after a delivered attempt',
    );
    assert.equal(
      await storeEndOfRun(db.knex, { webhookId, workflowId, runId: 'run-1' }, 'terminated', closedAt),
      'delivered',
      'a recorded status stays',
    );
    const failed = jobEvent(`j-${randomUUID()}`, 'new');
    const ids = webhookIds(failed);
    await claimEvent(db.knex, atRest, {
      ...row(ids.webhookId),
      workflowId: ids.workflowId,
      event: toEnvelope(failed),
      orderingKey: 'k-failed',
    });
    assert.equal(
      await storeEndOfRun(
        db.knex,
        { webhookId: ids.webhookId, workflowId: ids.workflowId, runId: 'run-2' },
        undefined,
        closedAt,
      ),
      'failed',
      'a run that failed with no delivered attempt',
    );
    const [stored] = (await db.knex.raw('SELECT run_id, finished_at FROM webhook_events WHERE id = ?', [ids.webhookId]))
      .rows;
    assert.deepEqual(stored, { run_id: 'run-2', finished_at: new Date(closedAt) });
  });

  it('an erased head whose POST is in flight holds its key until that POST is over: the next never overlaps it', async () => {
    // The head is a candidate's webhook; the next webhook of its key is a job event the erasure does not find.
    const key = `k-${randomUUID()}`;
    const headEvent = { ...structuredClone(candidateNew), event_id: `heads-${randomUUID()}`, ordering_key: key };
    const headId = webhookIds(headEvent as WebhookEventInput).webhookId;
    answerFor = (webhookId) => (webhookId === headId ? { status: 503, delayMs: 4000 } : { status: 204 });
    assert.equal((await post(headEvent)).status, 202);
    const second = await post({ ...jobEvent(`j-${randomUUID()}`), ordering_key: key });
    const secondId = String(second.body.webhook_id);
    const queued = client.workflow.getHandle(String(second.body.workflow_id));
    await eventually(
      'the second webhook queued',
      async () => (await queued.query(webhookStatusQuery)).state === 'queued',
      30_000,
    );
    await eventually(
      'the head claimed its first attempt',
      async () =>
        (await db.knex('webhook_events').where({ id: headId }).first('claimed_attempt')).claimed_attempt === 1,
      10_000,
    );
    // The erasure's transaction runs while the head's POST is under way (the partner answers after 4 s).
    const erasureId = randomUUID();
    const [{ subject_keys: subjectKeys }] = (
      await db.knex.raw('SELECT subject_keys FROM webhook_events WHERE id = ?', [headId])
    ).rows as Array<{ subject_keys: string[] }>;
    assert.ok(subjectKeys.length > 0);
    await db.knex('erasures').insert({
      id: erasureId,
      subject_kind: 'candidate_id',
      subject_key: subjectKeys[0],
      subject_keys: [subjectKeys[0]],
      subject_key_ids: [],
      requested_by: 'test',
    });
    const erasedAtMs = performance.now();
    assert.deepEqual(await eraseSubjectWebhooks(db.knex, erasureId), {
      webhooksFound: 1,
      deliveriesCancelled: 1,
      bodiesRemoved: 1,
    });
    assert.deepEqual(
      await placeOfRow(headId),
      { status: 'cancelled', settled: false, gap: false, gaps: 0 },
      'its attempt is in flight: the place stays open',
    );
    // The sweep neither settles the head nor wakes the next while the POST may still go on.
    assert.deepEqual(await sweepOrdering({ knex: db.knex, logger, gateway: stack.gateway }, 0), {
      settled: 0,
      woken: 0,
    });
    // The head's attempt is recorded when the partner answers: no attempt in flight, so the next sweep settles it.
    const recorded = async () =>
      (await db.knex.raw('SELECT count(*)::int AS n FROM webhook_attempts WHERE webhook_id = ?', [headId])).rows[0]
        .n as number;
    await eventually('the head attempt recorded', async () => (await recorded()) === 1, 15_000);
    assert.deepEqual(await sweepOrdering({ knex: db.knex, logger, gateway: stack.gateway }, 0), {
      settled: 1,
      woken: 1,
    });
    await delivered(secondId);
    const headPost = arrivals.find((a) => a.webhookId === headId)!;
    const next = arrivals.find((a) => a.webhookId === secondId)!;
    assert.ok(
      next.startedMs >= headPost.endedMs,
      `the next POST started ${(headPost.endedMs - next.startedMs).toFixed(0)} ms before the erased head's ended`,
    );
    assert.ok(headPost.endedMs - erasedAtMs > 1000, 'the erasure ran while the head was in flight');
    assert.deepEqual(await placeOfRow(headId), { status: 'cancelled', settled: true, gap: true, gaps: 1 });
  });

  it('an erased head whose attempt was claimed and never recorded (its worker lost) settles once the longest attempt is over', async () => {
    const key = `k-${randomUUID()}`;
    const atRest = dataAtRest(stack.config);
    const place = async (event: WebhookEventInput & { event_id: string }) => {
      const ids = webhookIds(event);
      await claimEvent(db.knex, atRest, {
        ...ids,
        runId: null,
        isTest: false,
        event: toEnvelope(event),
        orderingKey: key,
      });
      return ids.webhookId;
    };
    const headId = await place(jobEvent(`j-${randomUUID()}`, 'new'));
    const nextId = await place(jobEvent(`j-${randomUUID()}`));
    // The head's first attempt was claimed, then an erasure cancelled it; the next webhook waits behind it.
    await db.knex.raw(
      `UPDATE webhook_events SET claimed_attempt = 1, status = 'cancelled', status_reason = 'erasure', finished_at = now() WHERE id = ?`,
      [headId],
    );
    await db.knex.raw(`UPDATE ordering_places SET waiting_since = now() - interval '1 minute' WHERE webhook_id = ?`, [
      nextId,
    ]);
    const sweep = () => sweepOrdering({ knex: db.knex, logger, gateway: stack.gateway }, 0);
    assert.deepEqual(
      await sweep(),
      { settled: 0, woken: 0 },
      'within PARTNER_TIMEOUT_MS + 15 s of the erasure its POST may still be under way',
    );
    assert.equal((await placeOfRow(headId)).settled, false);
    await db.knex.raw(`UPDATE webhook_events SET finished_at = now() - interval '46 seconds' WHERE id = ?`, [headId]);
    // Settled without asking Temporal; the next webhook has no run here, so no wake is taken.
    assert.deepEqual(await sweep(), { settled: 1, woken: 0 });
    assert.deepEqual(await placeOfRow(headId), { status: 'cancelled', settled: true, gap: true, gaps: 1 });
  });

  it("a retried event_id that brings another ordering_key sends its first acceptance's key on every attempt", async () => {
    // The first acceptance wrote the row and its place under its key, and its start's outcome was unknown; the
    // retry (same event_id, another ordering_key) starts the run.
    const event = { ...jobEvent(`j-${randomUUID()}`, 'new'), ordering_key: `first-${randomUUID()}` };
    const { webhookId, eventId, workflowId } = webhookIds(event);
    const claim = await claimEvent(db.knex, dataAtRest(stack.config), {
      webhookId,
      eventId,
      workflowId,
      runId: null,
      isTest: false,
      event: toEnvelope(event),
      orderingKey: event.ordering_key,
    });
    assert.equal(claim.kind, 'start');
    answerFor = (id, n) => ({ status: id === webhookId && n < 3 ? 503 : 204 });
    const retried = await post({ ...event, ordering_key: `second-${randomUUID()}` });
    assert.equal(retried.status, 202);
    await delivered(webhookId);
    const sent = arrivals.filter((a) => a.webhookId === webhookId);
    assert.deepEqual(
      sent.map((a) => [a.key, a.sequence, a.status]),
      [
        [event.ordering_key, 1, 503],
        [event.ordering_key, 1, 503],
        [event.ordering_key, 1, 204],
      ],
    );
  });
});
