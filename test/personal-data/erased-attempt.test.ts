// An attempt of a webhook an erasure cancelled, on real PostgreSQL and a loopback partner: its claim is refused
// and nothing is POSTed; an attempt already in flight when the erasure ran records its outcome without its
// response excerpt and without overwriting the status; the workflow's own record of an outcome does not either.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { ApplicationFailure } from '@temporalio/common';
import { DefaultLogger } from '@temporalio/worker';
import { loadConfig, type Config } from '../../lib/config';
import { createActivities, type WebhookActivities } from '../../activities/webhooks/delivery';
import { createLogger } from '../../lib/logger';
import { DEVELOPMENT_SUBJECT_INDEX_KEY } from '../../lib/at-rest';
import { eventSubjectKeys, subjectKey } from '../../lib/subject-index';
import { toEnvelope, type WebhookEventInput } from '../../events/envelope';
import { webhookIds } from '../../application/ingestion/ids';
import { eraseSubjectWebhooks, writeSubjectKeys } from '../../store/personal-data/erasure-steps';
import { insertErasure } from '../../store/personal-data/erasures';
import { failedAttempt, type DeliverAttemptInput, type DeliveredAttempt, type WebhookRef } from '../../lib/delivery';
import candidateNew from '../fixtures/events/candidate-new.json';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { eventually } from '../support/eventually';
import { answer, startPartnerServer, type PartnerServer } from '../support/partner-server';
import { PARTNER_TOKEN } from '../support/tokens';

type DeliverAttemptOnly = (input: DeliverAttemptInput) => Promise<DeliveredAttempt>;

describe('an attempt of an erased webhook', function () {
  this.timeout(30_000);
  let db: TestDatabase;
  let partner: PartnerServer;
  let config: Config;
  let activities: WebhookActivities;
  const env = new MockActivityEnvironment({}, { logger: new DefaultLogger('ERROR', () => {}) });
  let event: WebhookEventInput;
  let ids: ReturnType<typeof webhookIds>;

  before(async () => {
    db = await createTestDatabase();
    partner = await startPartnerServer();
    config = loadConfig({
      PARTNER_ENDPOINT: partner.url,
      PARTNER_ACCESS_TOKEN: PARTNER_TOKEN,
      PARTNER_TIMEOUT_MS: '2000',
    });
    activities = createActivities({ config: () => config, knex: db.knex, logger: createLogger('silent') });
  });
  after(async () => {
    await partner.close();
    await db.drop();
  });
  beforeEach(() => {
    partner.requests.length = 0;
    event = { ...(structuredClone(candidateNew) as WebhookEventInput), event_id: `erased-${randomUUID()}` };
    ids = webhookIds(event);
  });

  const input = (attempt: number): DeliverAttemptInput => {
    const webhook: WebhookRef = { ...ids, runId: 'run-1', isTest: false };
    return {
      webhookId: ids.webhookId,
      attempt,
      event: toEnvelope(event),
      scheduledAt: new Date().toISOString(),
      finalOnFailure: attempt === 4,
      webhook,
    };
  };
  const deliver = (attempt: number) => env.run(activities.deliverAttempt as DeliverAttemptOnly, input(attempt));
  const row = () =>
    db
      .knex('webhook_events')
      .where({ id: ids.webhookId })
      .first('status', 'status_reason', 'body', 'payload_removed_reason');
  const attempts = () =>
    db
      .knex('webhook_attempts')
      .where({ webhook_id: ids.webhookId })
      .orderBy('attempt')
      .select('attempt', 'http_status', 'response_body', 'response_body_sealed');
  /** The erasure's transaction, as its workflow runs it, for this event's candidate. */
  const erase = async () => {
    await writeSubjectKeys(
      db.knex,
      [{ id: ids.webhookId, keys: eventSubjectKeys(DEVELOPMENT_SUBJECT_INDEX_KEY, toEnvelope(event)) }],
      'development',
    );
    const erasureId = randomUUID();
    const key = subjectKey(
      DEVELOPMENT_SUBJECT_INDEX_KEY,
      'candidate_id',
      (event.data as { candidate: { id: string } }).candidate.id,
    );
    await insertErasure(db.knex, {
      id: erasureId,
      subjectKind: 'candidate_id',
      subjectKeys: [key!],
      keyIds: ['development'],
      companyId: null,
      requestedBy: 'test',
    });
    return eraseSubjectWebhooks(db.knex, erasureId);
  };

  it('refuses the claim of the next attempt: a non-retryable failure, no POST, nothing recorded, the status kept', async () => {
    partner.handler = answer(500, 'try later');
    await deliver(1);
    assert.equal(partner.requests.length, 1);
    assert.deepEqual(await erase(), { webhooksFound: 1, deliveriesCancelled: 1, bodiesRemoved: 1 });
    partner.handler = answer(200, 'ok');
    await assert.rejects(deliver(2), (error: unknown) => {
      assert.ok(error instanceof ApplicationFailure);
      assert.deepEqual(
        [error.type, error.nonRetryable, error.message],
        ['WebhookErased', true, 'the webhook was erased on request: the attempt is not sent'],
      );
      return true;
    });
    assert.equal(partner.requests.length, 1);
    assert.deepEqual(await row(), {
      status: 'cancelled',
      status_reason: 'erasure',
      body: null,
      payload_removed_reason: 'erasure',
    });
    assert.deepEqual(await attempts(), [
      { attempt: 1, http_status: 500, response_body: null, response_body_sealed: null },
    ]);
  });

  it('records an attempt in flight when the erasure ran without its excerpt, and keeps the status cancelled by erasure', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    partner.handler = (_req, res) => void released.then(() => res.writeHead(200).end('thanks, Ada'));
    const delivering = deliver(1);
    await eventually('the POST at the partner', async () => partner.requests.length === 1);
    await db
      .knex('webhook_events')
      .where({ id: ids.webhookId })
      .first()
      .then((stored) => assert.equal(stored.status, 'pending'));
    assert.deepEqual(await erase(), { webhooksFound: 1, deliveriesCancelled: 1, bodiesRemoved: 1 });
    release();
    const { outcome, needsRecord } = (await delivering) as DeliveredAttempt;
    assert.deepEqual([outcome.httpStatus, outcome.succeeded, needsRecord], [200, true, false]);
    assert.deepEqual(await row(), {
      status: 'cancelled',
      status_reason: 'erasure',
      body: null,
      payload_removed_reason: 'erasure',
    });
    assert.deepEqual(await attempts(), [
      { attempt: 1, http_status: 200, response_body: null, response_body_sealed: null },
    ]);
  });

  it("the workflow's own records (recordAttempt, recordOutcome) keep the status and store no excerpt", async () => {
    partner.handler = answer(500, 'busy');
    await deliver(1);
    await erase();
    const webhook = input(2).webhook;
    const attempt = {
      ...failedAttempt(2, { errorClass: 'other', errorMessage: 'x' }),
      httpStatus: 503,
      responseBody: 'busy for Ada',
      scheduledAt: new Date().toISOString(),
      trigger: 'schedule' as const,
    };
    await env.run(activities.recordAttempt, { webhook, attempt });
    await env.run(activities.recordOutcome, {
      webhook,
      status: 'failed' as const,
      finishedAt: new Date().toISOString(),
    });
    assert.deepEqual(await row(), {
      status: 'cancelled',
      status_reason: 'erasure',
      body: null,
      payload_removed_reason: 'erasure',
    });
    assert.deepEqual(await attempts(), [
      { attempt: 1, http_status: 500, response_body: null, response_body_sealed: null },
      { attempt: 2, http_status: 503, response_body: null, response_body_sealed: null },
    ]);
  });

  it("settles an ordered webhook's place with a gap, and clears the key of a lane left with erased webhooks only", async () => {
    partner.handler = answer(503, 'try later');
    const candidateId = (event.data as { candidate: { id: string } }).candidate.id;
    const ownKey = `candidate:${candidateId}`;
    // The candidate's own lane, and a lane it shares with another candidate's webhook.
    const shared = `shared-${randomUUID()}`;
    const other = { ...(structuredClone(candidateNew) as WebhookEventInput), event_id: `erased-other-${randomUUID()}` };
    (other.data as { candidate: { id: string } }).candidate.id = `other-${randomUUID()}`;
    const otherIds = webhookIds(other);
    const ordered = (orderingKey: string, of = { event, ids }): DeliverAttemptInput => ({
      webhookId: of.ids.webhookId,
      attempt: 1,
      event: toEnvelope(of.event),
      scheduledAt: new Date().toISOString(),
      finalOnFailure: false,
      webhook: { ...of.ids, runId: 'run-1', isTest: false },
      orderingKey,
    });
    const first = (await env.run(activities.deliverAttempt as DeliverAttemptOnly, ordered(ownKey))) as DeliveredAttempt;
    assert.equal(first.sequence, 1);
    assert.equal(partner.requests.at(-1)!.headers['webhook-ordering-key'], ownKey);
    const otherEvent = { event: other, ids: otherIds };
    await env.run(activities.deliverAttempt as DeliverAttemptOnly, ordered(shared, otherEvent));
    // A second webhook of the candidate, in the shared lane behind the other candidate's: queued, nothing sent.
    const second = { ...(structuredClone(event) as WebhookEventInput), event_id: `erased-second-${randomUUID()}` };
    const secondIds = webhookIds(second);
    const queued = await env.run(activities.deliverAttempt, ordered(shared, { event: second, ids: secondIds }));
    assert.deepEqual(queued, { queued: { sequence: 2, behind: { webhookId: otherIds.webhookId, sequence: 1 } } });
    await writeSubjectKeys(
      db.knex,
      [{ id: secondIds.webhookId, keys: eventSubjectKeys(DEVELOPMENT_SUBJECT_INDEX_KEY, toEnvelope(second)) }],
      'development',
    );

    assert.deepEqual(await erase(), { webhooksFound: 2, deliveriesCancelled: 2, bodiesRemoved: 2 });
    const places = await db
      .knex('ordering_places as p')
      .join('ordering_lanes as l', 'l.id', 'p.lane_id')
      .whereIn('p.webhook_id', [ids.webhookId, secondIds.webhookId, otherIds.webhookId])
      .select(
        'p.webhook_id',
        'p.seq',
        'p.gap',
        db.knex.raw('p.settled_at IS NOT NULL AS settled'),
        'l.key_text',
        db.knex.raw('l.key_digest IS NULL AS digest_cleared'),
      );
    const byId = new Map(places.map((p: { webhook_id: string }) => [p.webhook_id, p]));
    assert.deepEqual(byId.get(ids.webhookId), {
      webhook_id: ids.webhookId,
      seq: 1,
      gap: true,
      settled: true,
      key_text: null,
      digest_cleared: true,
    });
    assert.deepEqual(byId.get(secondIds.webhookId), {
      webhook_id: secondIds.webhookId,
      seq: 2,
      gap: true,
      settled: true,
      key_text: shared,
      digest_cleared: false,
    });
    assert.deepEqual(byId.get(otherIds.webhookId), {
      webhook_id: otherIds.webhookId,
      seq: 1,
      gap: false,
      settled: false,
      key_text: shared,
      digest_cleared: false,
    });
    assert.equal(
      (await db.knex('ordering_lanes').where({ key_text: ownKey }).count('* as n'))[0].n,
      0,
      "no lane keeps the erased candidate's key",
    );
  });
});
