import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import zlib from 'node:zlib';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import knexFactory from 'knex';
import pino from 'pino';
import type { Knex } from '../../db/database';
import { loadConfig, type Config } from '../../lib/config';
import { createActivities, type WebhookActivities } from '../../activities/webhooks/delivery';
import { USER_AGENT } from '../../events/user-agent';
import { toEnvelope, type WebhookEventInput } from '../../events/envelope';
import { insertWebhook } from '../../store/ingestion/webhook-ingestion';
import { webhookIds } from '../../application/ingestion/ids';
import { ApplicationFailure } from '@temporalio/common';
import { Webhook } from 'standardwebhooks';
import { webhookAttempts } from '../../lib/metrics';
import type {
  AttemptOutcome,
  AttemptRecord,
  DeliverAttemptInput,
  DeliveredAttempt,
  WebhookRef,
} from '../../lib/delivery';
import { createPostToPartner } from '../../partner-client/partner-post';
import candidateNew from '../fixtures/events/candidate-new.json';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { answer, closedPort, startPartnerServer, type PartnerServer } from '../support/partner-server';
import { startTcpProxy } from '../support/tcp-proxy';
import { capturingLogger } from '../support/capturing-logger';
import { IN_CLEAR } from '../support/at-rest';
import { PARTNER_TOKEN } from '../support/tokens';

/** deliverAttempt where the partner gate is open: it never answers held here. */
type DeliverAttemptOnly = (input: DeliverAttemptInput) => Promise<DeliveredAttempt>;

const event = candidateNew as WebhookEventInput;
const ids = webhookIds(event);
const envelope = toEnvelope(event);

function configFor(endpoint: string, token = PARTNER_TOKEN, timeoutMs = 400): Config {
  return loadConfig({ PARTNER_ENDPOINT: endpoint, PARTNER_ACCESS_TOKEN: token, PARTNER_TIMEOUT_MS: String(timeoutMs) });
}

describe('webhook activities', function () {
  this.timeout(20_000);
  let db: TestDatabase;
  let partner: PartnerServer;
  let config: Config;
  let logs: string[];
  let activities: WebhookActivities;
  // The SDK logs every failed activity run; these tests fail some on purpose.
  const env = new MockActivityEnvironment({}, { logger: new DefaultLogger('ERROR', () => {}) });
  let logger: ReturnType<typeof capturingLogger>['logger'];
  /** The POST of one attempt, as deliverAttempt makes it once the attempt is claimed. */
  const send = (attempt = 1, timeoutMs?: number): Promise<AttemptOutcome> =>
    createPostToPartner({ config: () => config, logger })({
      webhookId: ids.webhookId,
      attempt,
      event: envelope,
      timeoutMs,
    });

  before(async () => {
    db = await createTestDatabase();
    partner = await startPartnerServer();
  });
  after(async () => {
    await partner.close();
    await db.drop();
  });
  beforeEach(() => {
    partner.requests.length = 0;
    partner.handler = answer(200, 'ok');
    config = configFor(partner.url);
    const captured = capturingLogger();
    logs = captured.lines;
    logger = captured.logger;
    activities = createActivities({ config: () => config, knex: db.knex, logger });
  });

  describe('the POST of an attempt (postToPartner)', () => {
    it('makes exactly one POST with the spec headers, the webhook id and timestamp, and the envelope as body', async () => {
      const before = Math.floor(Date.now() / 1000);
      const outcome = await send();
      const after = Math.floor(Date.now() / 1000);
      assert.equal(partner.requests.length, 1);
      const [request] = partner.requests;
      assert.equal(request.method, 'POST');
      assert.equal(request.url, '/hooks/partner');
      assert.deepEqual([...request.rawHeaderNames].map((h) => h.toLowerCase()).sort(), [
        'accept',
        'accept-encoding',
        'authorization',
        'connection',
        'content-length',
        'content-type',
        'host',
        'user-agent',
        'webhook-id',
        'webhook-timestamp',
      ]);
      assert.equal(request.headers['accept-encoding'], 'gzip, deflate');
      assert.equal(request.headers.accept, '*/*');
      assert.equal(request.headers.connection, 'keep-alive');
      assert.equal(request.headers.authorization, `Bearer ${PARTNER_TOKEN}`);
      assert.equal(request.headers['content-type'], 'application/json');
      assert.equal(request.headers['user-agent'], USER_AGENT);
      assert.match(USER_AGENT, /^partner-integration-service\/\d+\.\d+\.\d+ /);
      assert.equal(request.headers['webhook-id'], ids.webhookId);
      const timestamp = Number(request.headers['webhook-timestamp']);
      assert.ok(
        timestamp >= before && timestamp <= after,
        `webhook-timestamp ${timestamp} not in [${before}, ${after}]`,
      );
      assert.deepEqual(JSON.parse(request.body), { event_type: 'candidate', action: 'new', data: event.data });
      assert.equal(
        request.body,
        JSON.stringify({ event_type: event.event_type, action: event.action, data: event.data }),
      );

      assert.equal(outcome.attempt, 1);
      assert.equal(outcome.httpStatus, 200);
      assert.equal(outcome.succeeded, true);
      assert.equal(outcome.errorClass, null);
      assert.equal(outcome.errorMessage, null);
      assert.equal(outcome.responseBody, 'ok');
      assert.ok(outcome.durationMs >= 0 && outcome.durationMs < 5000);
      assert.ok(Math.abs(Date.parse(outcome.startedAt) - Date.now()) < 5000);
    });

    it('sends the same webhook-id on every attempt and a fresh webhook-timestamp', async () => {
      await send(1);
      await send(2);
      assert.deepEqual(
        partner.requests.map((r) => r.headers['webhook-id']),
        [ids.webhookId, ids.webhookId],
      );
      assert.ok(partner.requests.every((r) => /^\d{10}$/.test(String(r.headers['webhook-timestamp']))));
    });

    it('counts each attempt in partner_service_webhook_attempts_total by outcome', async () => {
      const count = async (outcome: string) =>
        (await webhookAttempts.get()).values.find(
          (v) => v.labels.outcome === outcome && v.labels.event_type === 'candidate',
        )?.value ?? 0;
      const [ok, serverError] = [await count('2xx'), await count('5xx')];
      partner.handler = answer(200);
      await send();
      partner.handler = answer(503);
      await send();
      assert.equal(await count('2xx'), ok + 1);
      assert.equal(await count('5xx'), serverError + 1);
    });

    const statusCases: Array<[number, boolean]> = [
      [200, true],
      [204, true],
      [302, false],
      [404, false],
      [500, false],
      [600, false],
    ];
    for (const [status, succeeded] of statusCases) {
      it(`records HTTP ${status} as ${succeeded ? 'success' : 'failure'}`, async () => {
        partner.handler = answer(
          status,
          status === 204 ? '' : `answer ${status}`,
          status === 302 ? { location: '/elsewhere' } : {},
        );
        const outcome = await send();
        assert.deepEqual(
          {
            httpStatus: outcome.httpStatus,
            succeeded: outcome.succeeded,
            errorClass: outcome.errorClass,
            responseBody: outcome.responseBody,
          },
          { httpStatus: status, succeeded, errorClass: null, responseBody: status === 204 ? '' : `answer ${status}` },
        );
        assert.equal(partner.requests.length, 1, 'exactly one request: a redirect is never followed');
        assert.equal(partner.requests[0].url, '/hooks/partner');
      });
    }

    it('gives up on a hung server at PARTNER_TIMEOUT_MS and records a timeout', async () => {
      partner.handler = () => {}; // never answers
      const outcome = await send();
      assert.equal(outcome.errorClass, 'timeout');
      assert.equal(outcome.httpStatus, null);
      assert.equal(outcome.succeeded, false);
      assert.equal(outcome.responseBody, null);
      assert.match(outcome.errorMessage!, /PARTNER_TIMEOUT_MS/);
      assert.ok(outcome.durationMs >= 390 && outcome.durationMs < 3000, `duration ${outcome.durationMs}`);
    });

    it('uses the timeout the workflow sized the activity for when it is shorter than PARTNER_TIMEOUT_MS', async () => {
      partner.handler = () => {}; // never answers
      config = configFor(partner.url, PARTNER_TOKEN, 5000);
      const outcome = await send(1, 300);
      assert.equal(outcome.errorClass, 'timeout');
      assert.ok(outcome.durationMs >= 290 && outcome.durationMs < 2000, `duration ${outcome.durationMs}`);
    });

    it('records a refused connection', async () => {
      config = configFor(`http://127.0.0.1:${await closedPort()}/hook`);
      const outcome = await send();
      assert.equal(outcome.errorClass, 'connection_refused');
      assert.match(outcome.errorMessage!, /ECONNREFUSED/);
      assert.equal(outcome.httpStatus, null);
    });

    it('records a connection reset by the partner', async () => {
      partner.handler = (req) => req.socket.resetAndDestroy();
      const outcome = await send();
      assert.equal(outcome.errorClass, 'reset');
      assert.equal(outcome.httpStatus, null);
      assert.equal(outcome.succeeded, false);
    });

    it('records a TLS failure (https:// to a server that does not speak TLS)', async () => {
      config = configFor(partner.url.replace('http://', 'https://'));
      const outcome = await send();
      assert.equal(outcome.errorClass, 'tls');
      assert.match(outcome.errorMessage!, /SSL|TLS/);
    });

    it('records a DNS failure', async () => {
      config = configFor('http://partner-endpoint.invalid/hook');
      const outcome = await send();
      assert.equal(outcome.errorClass, 'dns');
      assert.match(outcome.errorMessage!, /ENOTFOUND|EAI_AGAIN/);
    });

    it('reads the token and endpoint from configuration at send time, so a rotated token applies to retries', async () => {
      // One poster for both sends, as a worker keeps one: only a token read at send time can change between them.
      const post = createPostToPartner({ config: () => config, logger });
      const sendWith = (attempt: number) => post({ webhookId: ids.webhookId, attempt, event: envelope });
      await sendWith(1);
      config = configFor(partner.url, 'rotated-token-BBBB-2222');
      await sendWith(2);
      assert.deepEqual(
        partner.requests.map((r) => r.headers.authorization),
        [`Bearer ${PARTNER_TOKEN}`, 'Bearer rotated-token-BBBB-2222'],
      );
    });

    it('keeps only the first 4 KiB of the response body, on a character boundary', async () => {
      partner.handler = answer(500, `${'a'.repeat(4095)}é${'b'.repeat(5000)}`);
      const outcome = await send();
      assert.equal(outcome.responseBody, 'a'.repeat(4095));
      partner.handler = answer(200, 'x'.repeat(10_000));
      assert.equal((await send()).responseBody, 'x'.repeat(4096));
    });

    it('decompresses a gzip response body before keeping its first 4 KiB', async () => {
      partner.handler = answer(400, zlib.gzipSync(`{"error":"bad payload"}${' '.repeat(9000)}`), {
        'content-encoding': 'gzip',
      });
      const outcome = await send();
      assert.equal(outcome.httpStatus, 400);
      assert.equal(outcome.responseBody, `{"error":"bad payload"}${' '.repeat(4096 - 23)}`);
    });

    it('records a failure without any request when PARTNER_ENDPOINT is not configured', async () => {
      config = loadConfig({ PARTNER_ACCESS_TOKEN: PARTNER_TOKEN });
      const outcome = await send();
      assert.equal(outcome.errorClass, 'other');
      assert.equal(outcome.errorMessage, 'PARTNER_ENDPOINT is not configured');
      assert.equal(partner.requests.length, 0);
    });

    it('never puts the token into the outcome or the logs', async () => {
      partner.handler = answer(401, 'unauthorized');
      const outcome = await send();
      assert.ok(!JSON.stringify(outcome).includes(PARTNER_TOKEN));
      assert.ok(logs.length > 0, 'the attempt was logged');
      assert.ok(!logs.join('').includes(PARTNER_TOKEN));
    });
  });

  describe('signed requests (PARTNER_SIGNING_SECRETS)', () => {
    const [oldSecret, newSecret, otherSecret] = [1, 2, 3].map((n) => `whsec_${Buffer.alloc(32, n).toString('base64')}`);
    const received = () => {
      const request = partner.requests.at(-1)!;
      return { body: request.body, headers: request.headers as Record<string, string> };
    };

    it('are not signed without secrets', async () => {
      await send();
      assert.equal(received().headers['webhook-signature'], undefined);
    });

    it('carry a Standard Webhooks signature the standardwebhooks receiver accepts, one entry per secret during a rotation', async () => {
      config = {
        ...configFor(partner.url),
        PARTNER_SIGNING_SECRETS: loadConfig({ PARTNER_SIGNING_SECRETS: `${newSecret} ${oldSecret}` })
          .PARTNER_SIGNING_SECRETS,
      };
      await send(2);
      const { body, headers } = received();
      assert.equal(body, JSON.stringify(envelope));
      assert.match(headers['webhook-signature'], /^v1,[A-Za-z0-9+/]+={0,2} v1,[A-Za-z0-9+/]+={0,2}$/);
      // A partner that knows either secret accepts it; a partner with another secret, or a changed body, does not.
      assert.deepEqual(new Webhook(oldSecret).verify(body, headers), envelope);
      assert.deepEqual(new Webhook(newSecret).verify(body, headers), envelope);
      assert.throws(() => new Webhook(otherSecret).verify(body, headers), /No matching signature found/);
      assert.throws(
        () => new Webhook(newSecret).verify(body.replace('candidate', 'Candidate'), headers),
        /No matching signature found/,
      );
      assert.throws(
        () => new Webhook(newSecret).verify(body, { ...headers, 'webhook-id': 'another-id' }),
        /No matching signature found/,
      );
    });
  });

  describe('deliverAttempt (the local activity of one attempt)', () => {
    const webhook: WebhookRef = { ...ids, workflowId: ids.workflowId, runId: 'run-7', isTest: false };
    const input = (attempt: number, fields: Partial<DeliverAttemptInput> = {}): DeliverAttemptInput => ({
      webhookId: ids.webhookId,
      attempt,
      event: envelope,
      scheduledAt: '2025-03-01T09:00:00.000Z',
      finalOnFailure: attempt === 4,
      webhook,
      ...fields,
    });
    const deliver = (attempt: number, fields: Partial<DeliverAttemptInput> = {}): Promise<DeliveredAttempt> =>
      env.run(activities.deliverAttempt as DeliverAttemptOnly, input(attempt, fields));
    const row = () => db.knex('webhook_events').where({ id: ids.webhookId }).first();
    const attemptRows = () =>
      db
        .knex('webhook_attempts')
        .where({ webhook_id: ids.webhookId })
        .orderBy('attempt')
        .select('attempt', 'http_status', 'error_class', 'succeeded');

    beforeEach(async () => {
      await db.knex('webhook_events').del();
    });

    it('claims, POSTs once and records the outcome with the final status in one go; the row is created from the event', async () => {
      partner.handler = answer(204);
      const { outcome, needsRecord } = await deliver(1);
      assert.deepEqual([outcome.httpStatus, outcome.succeeded, needsRecord], [204, true, false]);
      assert.equal(partner.requests.length, 1);
      const stored = await row();
      assert.deepEqual(
        [stored.claimed_attempt, stored.status, stored.run_id, stored.finished_at !== null],
        [1, 'delivered', 'run-7', true],
      );
      assert.deepEqual(await attemptRows(), [{ attempt: 1, http_status: 204, error_class: null, succeeded: true }]);
    });

    it('on a row the API wrote, records the last attempt and the final status in one statement', async () => {
      await insertWebhook(db.knex, IN_CLEAR, { ...webhook, event: envelope, runId: null });
      partner.handler = answer(500);
      await deliver(4, { webhook });
      const stored = await row();
      assert.deepEqual([stored.status, stored.run_id, stored.finished_at !== null], ['failed', 'run-7', true]);
      assert.deepEqual(await attemptRows(), [{ attempt: 4, http_status: 500, error_class: null, succeeded: false }]);
    });

    it('leaves the status pending after a failure that is not the last, and writes failed after the fourth', async () => {
      partner.handler = answer(500);
      await deliver(1);
      assert.equal((await row()).status, 'pending');
      await deliver(4);
      assert.equal((await row()).status, 'failed');
    });

    it('a second try of a recorded attempt returns its outcome without POSTing again', async () => {
      partner.handler = answer(503, 'busy');
      const first = await deliver(1);
      partner.handler = answer(204);
      const again = await deliver(1);
      assert.equal(partner.requests.length, 1);
      assert.deepEqual(again, { outcome: { ...first.outcome, responseBody: 'busy' }, needsRecord: false });
    });

    it('a second try of a recorded ordered attempt returns its sequence, and settles its place again when it was delivered', async () => {
      const ordered = { orderingKey: `job:${randomUUID()}` };
      const place = () =>
        db.knex('ordering_places').where({ webhook_id: ids.webhookId }).first('seq', 'settled_at', 'gap');
      partner.handler = answer(503);
      await deliver(1, ordered);
      // Without its sequence the workflow would send attempt 2 unordered, and nothing would settle the place.
      assert.equal((await deliver(1, ordered)).sequence, 1);
      assert.equal((await place()).settled_at, null);
      partner.handler = answer(204);
      await deliver(2, { ordering: { key: ordered.orderingKey, sequence: 1 } });
      // As if the try that recorded the delivery was lost before it settled the place (a worker SIGKILLed).
      await db.knex('ordering_places').where({ webhook_id: ids.webhookId }).update({ settled_at: null });
      const again = await deliver(2, { ordering: { key: ordered.orderingKey, sequence: 1 } });
      assert.deepEqual([again.outcome.succeeded, again.sequence, partner.requests.length], [true, 1, 2]);
      const settled = await place();
      assert.deepEqual([settled.seq, settled.settled_at !== null, settled.gap], [1, true, false]);
    });

    it('a try that finds its attempt claimed but unrecorded (a lost worker mid-POST) does not POST: the attempt is lost', async () => {
      await insertWebhook(db.knex, IN_CLEAR, { ...webhook, event: envelope, runId: null });
      await db.knex('webhook_events').where({ id: ids.webhookId }).update({ claimed_attempt: 2 });
      const { outcome, needsRecord } = await deliver(2, { webhook });
      assert.equal(partner.requests.length, 0);
      assert.deepEqual(
        [outcome.httpStatus, outcome.errorClass, outcome.succeeded, needsRecord],
        [null, 'timeout', false, false],
      );
      assert.equal(
        outcome.errorMessage,
        'attempt did not complete on the worker; it may have reached the partner, so it is not sent again',
      );
      assert.deepEqual(await attemptRows(), [
        { attempt: 2, http_status: null, error_class: 'timeout', succeeded: false },
      ]);
    });

    for (const { gate, statements } of [
      { gate: "with the queue's gate row in place", statements: 1 },
      { gate: 'and, with no gate row for the queue yet, once more after ensureGate writes it', statements: 2 },
    ]) {
      it(`the claim writes the missing row of a run started elsewhere, its start already reported, in the one statement, ${gate}`, async () => {
        // The gate row is what the count depends on: set it up rather than inherit it from an earlier test.
        await db.knex('partner_gate').del();
        if (statements === 1) await db.knex('partner_gate').insert({ task_queue: config.TEMPORAL_TASK_QUEUE });
        partner.handler = answer(503);
        const queries: string[] = [];
        const watch = (query: { sql: string }) => queries.push(query.sql);
        db.knex.on('query', watch);
        try {
          await deliver(1);
        } finally {
          db.knex.off('query', watch);
        }
        const inserts = queries.filter((text) => /INSERT INTO webhook_events/.test(text));
        assert.equal(inserts.length, statements);
        for (const text of inserts)
          assert.match(
            text,
            /^WITH gate AS .*partner_gate.*INSERT INTO webhook_events AS e .*ON CONFLICT \(id\) DO UPDATE/s,
          );
        const stored = await row();
        assert.deepEqual(
          [
            stored.event_id,
            stored.body,
            stored.workflow_id,
            stored.run_id,
            stored.start_reported,
            stored.claimed_attempt,
            stored.redelivery_of,
          ],
          [ids.eventId, envelope, ids.workflowId, 'run-7', true, 1, null],
        );
      });
    }

    it("the claim of a redelivery whose row is gone writes it again as the original's redelivery", async () => {
      partner.handler = answer(204);
      await insertWebhook(db.knex, IN_CLEAR, { ...webhook, event: envelope, runId: null });
      const redelivery = {
        ...webhook,
        webhookId: '0b9a4a5e-7c1d-4e3f-9a2b-5c6d7e8f9a0b',
        workflowId: `${ids.workflowId}-redelivery-1`,
      };
      await deliver(1, { webhookId: redelivery.webhookId, webhook: redelivery, webhookIdHeader: ids.webhookId });
      const stored = await db.knex('webhook_events').where({ id: redelivery.webhookId }).first();
      assert.deepEqual(
        [stored.event_id, stored.redelivery_of, stored.redelivery_key, stored.status],
        [ids.eventId, ids.webhookId, `run:${redelivery.workflowId}`, 'delivered'],
      );
    });

    it('in a draining worker, claims and POSTs nothing: fails WorkerDraining with a retry delay past the local retry threshold', async () => {
      const draining = new AbortController();
      const drained = createActivities({
        config: () => config,
        knex: db.knex,
        logger: capturingLogger().logger,
        draining: draining.signal,
      });
      draining.abort();
      await assert.rejects(env.run(drained.deliverAttempt, input(1)), (error: unknown) => {
        assert.ok(error instanceof ApplicationFailure);
        assert.deepEqual([error.type, error.nonRetryable, error.nextRetryDelay], ['WorkerDraining', false, 65_000]);
        return true;
      });
      assert.equal(partner.requests.length, 0);
      assert.equal(await row(), undefined, 'no row claimed');
    });

    it('reports an outcome it could not record instead of failing, so the POST is never repeated', async () => {
      const broken = knexFactory({ client: 'pg', connection: db.url, pool: { min: 0, max: 1 } });
      try {
        partner.handler = (_req, res) => {
          // PostgreSQL goes away between the claim and the record.
          void broken.destroy().then(() => res.writeHead(204).end());
        };
        const flaky = createActivities({ config: () => config, knex: broken, logger: capturingLogger().logger });
        const { outcome, needsRecord }: DeliveredAttempt = await env.run(
          flaky.deliverAttempt as DeliverAttemptOnly,
          input(1),
        );
        assert.deepEqual([outcome.httpStatus, outcome.succeeded, needsRecord], [204, true, true]);
        assert.equal(partner.requests.length, 1);
      } finally {
        await broken.destroy();
      }
    });
  });

  describe('recordAttempt and recordOutcome', () => {
    const webhook: WebhookRef = { ...ids, workflowId: ids.workflowId, runId: 'run-1', isTest: false };
    const attempt = (n: number, fields: Partial<AttemptRecord> = {}): AttemptRecord => ({
      attempt: n,
      scheduledAt: '2025-03-01T09:00:10.000Z',
      startedAt: '2025-03-01T09:00:10.250Z',
      durationMs: 42,
      httpStatus: 503,
      errorClass: null,
      errorMessage: null,
      responseBody: 'busy',
      succeeded: false,
      ...fields,
    });
    const attemptRows = (knex: Knex) =>
      knex('webhook_attempts').where({ webhook_id: ids.webhookId }).orderBy('attempt');

    // The attempt's claim or the API writes the row before any record (store/webhooks/attempt-claim.ts).
    beforeEach(async () => {
      await db.knex('webhook_events').del();
      await insertWebhook(db.knex, IN_CLEAR, { ...webhook, event: envelope, runId: null });
    });

    it('writes the attempt with every field into the row, and gives the row its run id', async () => {
      await env.run(activities.recordAttempt, { webhook, attempt: attempt(1) });
      const row = await db.knex('webhook_events').where({ id: ids.webhookId }).first();
      assert.equal(row.event_id, ids.eventId);
      assert.equal(row.event_type, 'candidate');
      assert.equal(row.action, 'new');
      assert.equal(row.company_id, 'acme');
      assert.deepEqual(row.body, envelope);
      assert.equal(row.workflow_id, ids.workflowId);
      assert.equal(row.run_id, 'run-1');
      assert.equal(row.status, 'pending');
      const [stored] = await attemptRows(db.knex);
      assert.deepEqual(
        { ...stored, recorded_at: undefined },
        {
          webhook_id: ids.webhookId,
          attempt: 1,
          scheduled_at: new Date('2025-03-01T09:00:10.000Z'),
          started_at: new Date('2025-03-01T09:00:10.250Z'),
          duration_ms: 42,
          http_status: 503,
          error_class: null,
          error_message: null,
          response_body: 'busy',
          response_body_sealed: null,
          response_body_key_id: null,
          succeeded: false,
          trigger: 'schedule',
          expired_links: [],
          is_test: false,
          recorded_at: undefined,
        },
      );
    });

    it('a record that arrives before its row fails retryably and writes nothing; once the row exists it is written', async () => {
      await db.knex('webhook_events').del();
      const idsOnly = webhook;
      await assert.rejects(
        env.run(activities.recordAttempt, { webhook: idsOnly, attempt: attempt(2) }),
        (error: Error) => {
          assert.equal(error.name, 'WebhookRowMissingError');
          return true;
        },
      );
      assert.deepEqual(await attemptRows(db.knex), []);
      await insertWebhook(db.knex, IN_CLEAR, { ...webhook, event: envelope, runId: null });
      await env.run(activities.recordAttempt, { webhook: { ...webhook, runId: null }, attempt: attempt(1) });
      await env.run(activities.recordAttempt, { webhook: idsOnly, attempt: attempt(2) });
      assert.deepEqual(
        (await attemptRows(db.knex)).map((row) => row.attempt),
        [1, 2],
      );
      assert.equal((await db.knex('webhook_events').where({ id: ids.webhookId }).first()).run_id, 'run-1');
    });

    it('is idempotent on (webhook, attempt): a repeated call changes nothing', async () => {
      await env.run(activities.recordAttempt, { webhook, attempt: attempt(1) });
      const first = await attemptRows(db.knex);
      await env.run(activities.recordAttempt, { webhook, attempt: attempt(1, { httpStatus: 200, succeeded: true }) });
      assert.deepEqual(await attemptRows(db.knex), first);
      await env.run(activities.recordAttempt, {
        webhook,
        attempt: attempt(2, { httpStatus: null, errorClass: 'reset', errorMessage: 'ECONNRESET' }),
      });
      assert.deepEqual(
        (await attemptRows(db.knex)).map((r) => [r.attempt, r.http_status, r.error_class]),
        [
          [1, 503, null],
          [2, null, 'reset'],
        ],
      );
    });

    it('fails non-retryably when PostgreSQL rejects the row itself, so Temporal does not retry it forever', async () => {
      await assert.rejects(
        env.run(activities.recordAttempt, { webhook, attempt: attempt(1, { durationMs: -5 }) }),
        (error: unknown) => {
          assert.ok(error instanceof ApplicationFailure);
          assert.equal(error.nonRetryable, true);
          assert.equal(error.type, 'RecordRejected');
          assert.match(error.message, /^PostgreSQL rejected the record \(SQLSTATE 23514\): /);
          return true;
        },
      );
      assert.deepEqual(await attemptRows(db.knex), []);
    });

    it('fills in the run id of a row the API created before the workflow started', async () => {
      await env.run(activities.recordAttempt, { webhook, attempt: attempt(1) });
      const row = await db.knex('webhook_events').where({ id: ids.webhookId }).first();
      assert.equal(row.run_id, 'run-1');
    });

    it('records the final status once; a repeated call keeps the first finish time', async () => {
      await env.run(activities.recordAttempt, { webhook, attempt: attempt(1, { httpStatus: 200, succeeded: true }) });
      await env.run(activities.recordOutcome, {
        webhook,
        status: 'delivered' as const,
        finishedAt: '2025-03-01T09:00:11.000Z',
      });
      await env.run(activities.recordOutcome, {
        webhook,
        status: 'delivered' as const,
        finishedAt: '2025-03-01T09:09:59.000Z',
      });
      const row = await db.knex('webhook_events').where({ id: ids.webhookId }).first();
      assert.equal(row.status, 'delivered');
      assert.deepEqual(row.finished_at, new Date('2025-03-01T09:00:11.000Z'));
    });

    it('loses nothing when PostgreSQL is briefly down: the failed call throws, the retry writes exactly once', async () => {
      const url = new URL(db.url);
      const proxy = await startTcpProxy(url.hostname, Number(url.port));
      url.port = String(proxy.port);
      const quiet = { warn() {}, error() {}, debug() {}, deprecate() {} };
      const knex = knexFactory({
        client: 'pg',
        connection: { connectionString: url.toString() },
        pool: { min: 0, max: 2 },
        acquireConnectionTimeout: 2000,
        log: quiet,
      });
      const flaky = createActivities({ config: () => config, knex, logger: pino({ level: 'silent' }) });
      try {
        await knex.raw('SELECT 1'); // a pooled connection that the outage will kill
        await proxy.cut();
        const input = { webhook, attempt: attempt(1) };
        await assert.rejects(env.run(flaky.recordAttempt, input));
        await assert.rejects(env.run(flaky.recordAttempt, input));
        await proxy.restore();
        // What Temporal does with the record activity: retry until it succeeds.
        let failures = 0;
        for (;;) {
          try {
            await env.run(flaky.recordAttempt, input);
            break;
          } catch {
            assert.ok(++failures < 10, 'recording never succeeded after PostgreSQL came back');
            await new Promise((r) => setTimeout(r, 100));
          }
        }
        await env.run(flaky.recordAttempt, input); // a late duplicate after a lost reply
        assert.deepEqual(
          (await attemptRows(db.knex)).map((r) => [r.attempt, r.http_status]),
          [[1, 503]],
        );
      } finally {
        await knex.destroy();
        await proxy.close();
      }
    });
  });
});
