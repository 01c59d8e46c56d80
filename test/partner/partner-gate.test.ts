// The partner gate on real PostgreSQL and a loopback partner, with the activities and the partner recovery as a worker
// runs them: pause, the breaker, Retry-After, the ceiling and the deployment-wide cap. The same behaviour on a
// real Temporal server, across processes, is in partner-protection.test.ts.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { loadConfig, type Config } from '../../lib/config';
import { createActivities } from '../../activities/webhooks/delivery';
import { RETRY_AFTER_CAP_MS, retryAfterMs } from '../../partner-client/retry-after';
import { probePartner } from '../../partner-client/partner-probe';
import { toEnvelope, type WebhookEventInput } from '../../events/envelope';
import { insertWebhook } from '../../store/ingestion/webhook-ingestion';
import { SEND_SLOT_HORIZON_MS, takeRecoveryLease } from '../../store/partner/partner-gate';
import { webhookIds } from '../../application/ingestion/ids';
import {
  freeSendSlots,
  RECOVERY_TICK_MS,
  recoveryTick,
  RELEASE_CATCH_UP_MS,
  RELEASE_SLOT_WINDOW_MS,
  releaseBatchSize,
  releasePace,
} from '../../application/partner/partner-recovery';
import { partnerStatus, pausePartner, resumePartner, limitPartner } from '../../application/partner/partner-operator';
import type { DeliverAttemptInput, DeliveredAttempt, HeldAttempt, WebhookRef } from '../../lib/delivery';
import companySignup from '../fixtures/events/company-signup.json';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { answer, startPartnerServer, type PartnerServer } from '../support/partner-server';
import { capturingLogger } from '../support/capturing-logger';
import { IN_CLEAR } from '../support/at-rest';
import { OPERATOR } from '../support/operator';
import { InvalidRequestError, PausedByOperatorError } from '../../lib/errors';
import {
  limitEndpoint,
  partnerEndpoint,
  pauseEndpoint,
  resumeEndpoint,
} from '../../application/partner/partner-endpoint';
import { PARTNER_TOKEN } from '../support/tokens';

describe('partner gate (PostgreSQL, loopback partner, the worker activities and the partner recovery)', function () {
  this.timeout(30_000);
  let db: TestDatabase;
  let partner: PartnerServer;
  const env = new MockActivityEnvironment({}, { logger: new DefaultLogger('ERROR', () => {}) });

  before(async () => {
    db = await createTestDatabase();
    partner = await startPartnerServer();
  });
  after(async () => {
    await partner.close();
    await db.drop();
  });

  /** A fresh task queue (so a fresh gate) and its configuration. */
  function configFor(extra: Record<string, string> = {}): Config {
    return loadConfig({
      PARTNER_ENDPOINT: partner.url,
      PARTNER_ACCESS_TOKEN: PARTNER_TOKEN,
      PARTNER_TIMEOUT_MS: '2000',
      TEMPORAL_TASK_QUEUE: `gate-${randomUUID()}`,
      ...extra,
    });
  }

  /** A webhook row as the API writes it, and the input of its attempt `attempt`. */
  async function stored(attempt = 1, fields: Partial<DeliverAttemptInput> = {}): Promise<DeliverAttemptInput> {
    const eventInput = { ...companySignup, event_id: `gate-${randomUUID()}` } as WebhookEventInput;
    const ids = webhookIds(eventInput);
    const event = toEnvelope(eventInput);
    const webhook: WebhookRef = {
      webhookId: ids.webhookId,
      eventId: ids.eventId,
      workflowId: ids.workflowId,
      runId: 'run-1',
      isTest: false,
    };
    await insertWebhook(db.knex, IN_CLEAR, { ...webhook, event, runId: null });
    return {
      webhookId: ids.webhookId,
      attempt,
      event,
      scheduledAt: new Date().toISOString(),
      finalOnFailure: attempt === 4,
      webhook,
      ...fields,
    };
  }

  function activitiesFor(config: Config) {
    const captured = capturingLogger();
    const activities = createActivities({ config: () => config, knex: db.knex, logger: captured.logger });
    const deliver = (input: DeliverAttemptInput) =>
      env.run(
        activities.deliverAttempt as (input: DeliverAttemptInput) => Promise<DeliveredAttempt | HeldAttempt>,
        input,
      );
    return { deliver, captured };
  }

  const row = (webhookId: string) =>
    db.knex('webhook_events').where({ id: webhookId }).first('claimed_attempt', 'held_since', 'status');
  const postsOf = (webhookId: string) =>
    partner.requests.filter((r) => r.method === 'POST' && r.headers['webhook-id'] === webhookId).length;

  beforeEach(() => {
    partner.requests.length = 0;
    partner.handler = answer(204);
  });

  it('while paused, an attempt is held: nothing is claimed or POSTed and the attempt keeps its number; after resume it goes out', async () => {
    const config = configFor();
    const { deliver } = activitiesFor(config);
    const { logger, entries } = capturingLogger();
    const status = await pausePartner(db.knex, config, logger, OPERATOR, { reason: 'partner maintenance until 14:00' });
    assert.equal(status.state, 'paused');
    assert.equal(status.reason, 'partner maintenance until 14:00');
    assert.ok(status.since instanceof Date);
    const input = await stored(2);
    const held = await deliver(input);
    assert.deepEqual(held, {
      held: { state: 'paused', pauseReason: 'partner maintenance until 14:00', ceilingMs: 86_400_000 },
    });
    const heldRow = await row(input.webhookId);
    assert.equal(heldRow.claimed_attempt, 0);
    assert.ok(heldRow.held_since instanceof Date);
    assert.equal(postsOf(input.webhookId), 0);
    assert.equal((await partnerStatus(db.knex, config)).held, 1);
    // A second pause keeps the first reason and logs nothing more: one line per change.
    await pausePartner(db.knex, config, logger, OPERATOR, { reason: 'another reason' });
    assert.equal((await partnerStatus(db.knex, config)).reason, 'partner maintenance until 14:00');
    await resumePartner(db.knex, config, logger, OPERATOR);
    await resumePartner(db.knex, config, logger, OPERATOR);
    assert.deepEqual(
      entries().map((e) => e.msg),
      [
        'partner paused: no POST leaves any worker until resume',
        'partner resumed: held deliveries go out at the cap, oldest first',
      ],
    );
    const sent = (await deliver(input)) as DeliveredAttempt;
    assert.equal(sent.outcome.attempt, 2);
    assert.equal(sent.outcome.httpStatus, 204);
    assert.equal(postsOf(input.webhookId), 1);
    const after = await row(input.webhookId);
    assert.deepEqual([after.claimed_attempt, after.held_since], [2, null]);
  });

  it('an attempt held past the ceiling goes out although the partner is still paused', async () => {
    const config = configFor();
    const { deliver } = activitiesFor(config);
    await pausePartner(db.knex, config, capturingLogger().logger, OPERATOR, { reason: 'long maintenance' });
    const input = await stored(1, { pastHoldCeiling: true });
    const sent = (await deliver(input)) as DeliveredAttempt;
    assert.equal(sent.outcome.httpStatus, 204);
    assert.equal(postsOf(input.webhookId), 1);
  });

  it('trips after PARTNER_BREAKER_FAILURES failing answers in a row, with one log line; a 400 for one payload is not counted and resets the count', async () => {
    const config = configFor({ PARTNER_BREAKER_FAILURES: '3', PARTNER_PROBE_INTERVAL_MS: '60000' });
    const { deliver, captured } = activitiesFor(config);
    partner.handler = answer(503);
    await deliver(await stored());
    await deliver(await stored());
    partner.handler = answer(400, '{"error":"bad payload"}');
    await deliver(await stored());
    assert.equal(
      (await partnerStatus(db.knex, config)).breaker.consecutive_failures,
      0,
      'a 400 says the partner answers',
    );
    partner.handler = answer(503);
    await deliver(await stored());
    await deliver(await stored());
    assert.equal((await partnerStatus(db.knex, config)).state, 'active');
    partner.handler = (_req, res) => res.destroy();
    const tripping = (await deliver(await stored())) as DeliveredAttempt;
    assert.equal(
      tripping.outcome.errorClass,
      'reset',
      'the POST that trips the breaker is an attempt, recorded as such',
    );
    const status = await partnerStatus(db.knex, config);
    assert.equal(status.state, 'tripped');
    assert.equal(status.breaker.trips, 1);
    assert.equal(status.breaker.consecutive_failures, 3);
    assert.ok(status.since instanceof Date && status.breaker.next_probe_at instanceof Date);
    assert.ok(status.breaker.next_probe_at.getTime() - status.since.getTime() >= 59_000);
    assert.equal(captured.entries().filter((e) => e.msg.startsWith('partner breaker tripped')).length, 1);
    partner.requests.length = 0;
    const held = await deliver(await stored(3));
    assert.deepEqual(held, { held: { state: 'tripped', pauseReason: null, ceilingMs: 86_400_000 } });
    assert.equal(partner.requests.length, 0, 'a held attempt sends nothing');
  });

  it('the partner recovery probes a tripped breaker once per interval with a HEAD, keeps it on a failing answer and closes it on any other', async () => {
    const config = configFor({ PARTNER_BREAKER_FAILURES: '1', PARTNER_PROBE_INTERVAL_MS: '1000' });
    const { deliver } = activitiesFor(config);
    partner.handler = answer(502);
    await deliver(await stored());
    // The first probe is due an interval after the trip.
    await db
      .knex('partner_gate')
      .where({ task_queue: config.TEMPORAL_TASK_QUEUE })
      .update({ probe_due_at: db.knex.raw('now()') });
    const { logger, entries } = capturingLogger();
    const released: string[] = [];
    const recovery = {
      config,
      knex: db.knex,
      logger,
      gateway: { release: async (id: string) => (released.push(id), true) },
      probe: () => probePartner(config),
    };
    partner.requests.length = 0;
    assert.equal(await recoveryTick(recovery), 'tripped');
    assert.equal(await recoveryTick(recovery), 'tripped', 'the next probe waits for its interval');
    assert.deepEqual(
      partner.requests.map((r) => [r.method, r.headers.authorization]),
      [['HEAD', `Bearer ${PARTNER_TOKEN}`]],
    );
    await new Promise((r) => setTimeout(r, 1100));
    partner.handler = answer(405);
    assert.equal(await recoveryTick(recovery), 'active');
    assert.equal(partner.requests.length, 2);
    assert.equal((await partnerStatus(db.knex, config)).state, 'active');
    assert.deepEqual(
      entries().map((e) => e.msg),
      [
        'partner probe failed: deliveries stay held',
        'partner breaker closed: a probe was answered, held deliveries go out at the cap, oldest first',
      ],
    );
  });

  /** `count` deliveries held by a pause at a cap of 2/s, and a partner recovery whose gateway records what it wakes. */
  async function heldBehindPause(count: number) {
    const config = configFor();
    const { deliver } = activitiesFor(config);
    const logger = capturingLogger().logger;
    await pausePartner(db.knex, config, logger, OPERATOR, { reason: 'drill' });
    const inputs: DeliverAttemptInput[] = [];
    for (let i = 0; i < count; i++) {
      const input = await stored();
      inputs.push(input);
      await deliver(input);
    }
    await limitPartner(db.knex, config, logger, OPERATOR, { max_per_second: 2 });
    const released: string[] = [];
    const recovery = {
      config,
      knex: db.knex,
      logger,
      gateway: { release: async (id: string) => (released.push(id), true) },
      probe: () => probePartner(config),
    };
    return { config, logger, inputs, released, recovery };
  }

  it('once the gate opens, the partner recovery wakes held deliveries oldest first, as many a tick as the cap', async () => {
    const { config, logger, inputs, released, recovery } = await heldBehindPause(5);
    assert.equal(await recoveryTick(recovery), 'paused');
    assert.deepEqual(released, [], 'nothing is woken while paused');
    await resumePartner(db.knex, config, logger, OPERATOR);
    // Only this queue's held rows: other tests' queues hold rows in the same database.
    await recoveryTick(recovery);
    assert.deepEqual(
      released,
      inputs.slice(0, 2).map((i) => i.webhook.workflowId),
    );
    await recoveryTick(recovery);
    await recoveryTick(recovery);
    assert.deepEqual(
      released,
      inputs.map((i) => i.webhook.workflowId),
    );
    assert.equal((await partnerStatus(db.knex, config)).held, 0);
  });

  it("sizes each release by the time since the last one: the cap a second of the clock, whatever the ticks' length", () => {
    const pace = releasePace();
    const sizes = [
      releaseBatchSize(pace, 40, 10_000), // the first batch: one tick's worth
      releaseBatchSize(pace, 40, 11_000), // a tick on time: the cap
      releaseBatchSize(pace, 40, 12_600), // a tick 1.6 s later makes up for the slow one
      releaseBatchSize(pace, 40, 12_610), // 10 ms earn 0.4 of a delivery, owed to the next batch
      releaseBatchSize(pace, 40, 12_650), // 0.4 + 1.6
    ];
    assert.deepEqual(sizes, [40, 40, 64, 0, 2]);
    assert.equal(
      sizes.reduce((a, b) => a + b),
      146,
      "the clock's 40 × (1 s + 2.65 s), however long each tick",
    );
    assert.equal(releaseBatchSize(pace, 40, 12_650 + 60_000), 80, "after a stall, at most RELEASE_CATCH_UP_MS's worth");
    assert.equal(RELEASE_CATCH_UP_MS, 2000);
    const slow = releasePace();
    const ticks = [0, 1700, 3400, 5100, 6800].map((at) => releaseBatchSize(slow, 3, at));
    assert.deepEqual(
      ticks,
      [3, 5, 5, 5, 5],
      'ticks 1.7 s apart at 3/s: 5.1 a tick, the tenths owed until they make one',
    );
    assert.equal(
      ticks.reduce((a, b) => a + b),
      Math.floor(3 + 3 * 6.8),
      'cap × (1 s + 6.8 s) in all, not cap a tick',
    );
  });

  it('a slow tick is caught up as far as the send slots its deliveries can still take: oldest first, each once', async () => {
    const { config, logger, inputs, released, recovery } = await heldBehindPause(40);
    await limitPartner(db.knex, config, logger, OPERATOR, { max_per_second: 10 });
    const slotsTakenFor = (ms: number) =>
      db.knex.raw(
        `UPDATE partner_gate SET next_send_at = clock_timestamp() + make_interval(secs => ?) WHERE task_queue = ?`,
        [ms / 1000, config.TEMPORAL_TASK_QUEUE],
      );
    const pace = releasePace();
    assert.equal(await recoveryTick(recovery, pace, 0), 'paused');
    assert.deepEqual(released, [], 'nothing is woken while paused');
    await resumePartner(db.knex, config, logger, OPERATOR);
    const woken: number[] = [];
    const tick = async (at: number) => {
      const before = released.length;
      assert.equal(await recoveryTick(recovery, pace, at), 'active');
      woken.push(released.length - before);
    };
    await tick(500); // the first batch: one tick's worth
    await slotsTakenFor(900);
    await tick(2200); // 17 earned by a tick 1.7 s late, 11 slots free in the window's last 1.1 s
    await slotsTakenFor(-1000);
    await tick(3900); // 17 earned, 20 slots free: the slow tick is caught up
    await tick(4400); // 5 earned, the 2 still held
    assert.deepEqual(woken, [10, 11, 17, 2]);
    assert.deepEqual(
      released,
      inputs.map((i) => i.webhook.workflowId),
      'each once, oldest first',
    );
    assert.equal((await partnerStatus(db.knex, config)).held, 0);
    await recoveryTick(recovery, pace, 60_000);
    assert.deepEqual(pace, releasePace(), 'with nothing held the account starts afresh: no credit for the idle time');
  });

  it("counts the send slots no claim has taken within the release window: a tick, then the claim's horizon", () => {
    assert.equal(RELEASE_SLOT_WINDOW_MS, RECOVERY_TICK_MS + SEND_SLOT_HORIZON_MS);
    assert.deepEqual(
      [0, 400, 1975, 2000, 5000].map((taken) => freeSendSlots(40, taken)),
      [80, 64, 1, 0, 0],
    );
  });

  it('a 429 with Retry-After holds every delivery until then, and the attempt that got it carries the delay', async () => {
    const config = configFor();
    const { deliver, captured } = activitiesFor(config);
    partner.handler = answer(429, '', { 'retry-after': '2' });
    const first = (await deliver(await stored())) as DeliveredAttempt;
    assert.equal(first.outcome.httpStatus, 429);
    assert.equal(first.outcome.retryAfterMs, 2000);
    const status = await partnerStatus(db.knex, config);
    assert.equal(status.state, 'throttled');
    assert.ok(status.retry_after_until && Math.abs(status.retry_after_until.getTime() - Date.now() - 2000) < 1000);
    assert.equal(
      captured.entries().filter((e) => e.msg === 'partner sent Retry-After: every delivery is held until then').length,
      1,
    );
    partner.handler = answer(204);
    const other = await stored();
    assert.deepEqual(await deliver(other), { held: { state: 'throttled', pauseReason: null, ceilingMs: 86_400_000 } });
    await new Promise((r) => setTimeout(r, 2100));
    assert.equal((await partnerStatus(db.knex, config)).state, 'active');
    assert.equal(((await deliver(other)) as DeliveredAttempt).outcome.httpStatus, 204);
  });

  it("a queue's gate row is written on first use by the statement that needs it: the attempt's claim (which then claims) or the recovery's lease", async () => {
    const gateRows = async (taskQueue: string) =>
      Number(
        (await db.knex('partner_gate').where({ task_queue: taskQueue }).count<{ count: string }[]>('* as count'))[0]
          .count,
      );
    const claimedFirst = configFor();
    assert.equal(await gateRows(claimedFirst.TEMPORAL_TASK_QUEUE), 0);
    const input = await stored();
    const result = (await activitiesFor(claimedFirst).deliver(input)) as DeliveredAttempt;
    assert.deepEqual([result.outcome.httpStatus, result.needsRecord], [204, false]);
    assert.equal(postsOf(input.webhookId), 1);
    assert.equal(await gateRows(claimedFirst.TEMPORAL_TASK_QUEUE), 1);

    const leasedFirst = configFor();
    assert.equal(await takeRecoveryLease(db.knex, leasedFirst.TEMPORAL_TASK_QUEUE, 'worker-a', 5000), true);
    assert.equal(
      await takeRecoveryLease(db.knex, leasedFirst.TEMPORAL_TASK_QUEUE, 'worker-b', 5000),
      false,
      'the lease is held',
    );
    assert.equal(await gateRows(leasedFirst.TEMPORAL_TASK_QUEUE), 1);
  });

  it('reads Retry-After as seconds or an HTTP date, only on 429 and 503, capped at an hour', () => {
    const now = Date.parse('2026-01-01T12:00:00Z');
    assert.equal(retryAfterMs(429, '120', now), 120_000);
    assert.equal(retryAfterMs(503, 'Thu, 01 Jan 2026 12:05:00 GMT', now), 300_000);
    assert.equal(retryAfterMs(503, 'Thu, 01 Jan 2026 11:00:00 GMT', now), 0);
    assert.equal(retryAfterMs(429, '999999', now), RETRY_AFTER_CAP_MS);
    assert.equal(retryAfterMs(429, ['7', '9'], now), 7000);
    assert.equal(retryAfterMs(500, '120', now), undefined);
    assert.equal(retryAfterMs(429, 'soon', now), undefined);
    assert.equal(retryAfterMs(429, undefined, now), undefined);
  });

  /** Delivers `count` attempts through three workers of `config`: the partner's arrival times, and the seconds taken. */
  async function deliverThroughThreeWorkers(config: Config, count: number) {
    const workers = [activitiesFor(config), activitiesFor(config), activitiesFor(config)];
    const inputs = await Promise.all(Array.from({ length: count }, () => stored()));
    const arrivals: number[] = [];
    partner.handler = (_req, res) => {
      arrivals.push(performance.now());
      res.writeHead(204).end();
    };
    const started = performance.now();
    await Promise.all(inputs.map((input, i) => workers[i % 3].deliver(input)));
    const seconds = (performance.now() - started) / 1000;
    const maxInAnySecond = Math.max(...arrivals.map((t) => arrivals.filter((u) => u >= t && u < t + 1000).length));
    assert.equal(arrivals.length, count);
    return { seconds, maxInAnySecond };
  }

  it('caps the POSTs of three workers together: 36 attempts at 10/s never see more than 13 in any second', async function () {
    this.timeout(60_000);
    const { seconds, maxInAnySecond } = await deliverThroughThreeWorkers(
      configFor({ PARTNER_MAX_PER_SECOND: '10' }),
      36,
    );
    assert.ok(maxInAnySecond <= 13, `at most 13 POSTs in any second, saw ${maxInAnySecond}`);
    assert.ok(seconds >= 3.2, `36 POSTs at 10/s take about 3.5 s, took ${seconds.toFixed(2)} s`);
  });

  it("the partner's own rate lowers the cap of every worker together; an operator's lower cap wins in turn", async function () {
    this.timeout(60_000);
    const config = configFor({ PARTNER_MAX_PER_SECOND: '200' });
    const logger = capturingLogger().logger;
    const app = { actor: 'app:rate-app' };
    const limited = await limitEndpoint({ knex: db.knex, config, logger }, app, { max_per_second: 10 });
    assert.deepEqual([limited.max_per_second, limited.deployment_max_per_second, limited.rate_in_force], [10, 200, 10]);
    const { seconds, maxInAnySecond } = await deliverThroughThreeWorkers(config, 36);
    assert.ok(maxInAnySecond <= 13, `at most 13 POSTs in any second, saw ${maxInAnySecond}`);
    assert.ok(seconds >= 3.2, `36 POSTs at 10/s take about 3.5 s, took ${seconds.toFixed(2)} s`);
    // The operator lowers the cap below the partner's rate: the lower one is in force, for the claim and the status.
    await limitPartner(db.knex, config, logger, OPERATOR, { max_per_second: 4 });
    const status = await partnerStatus(db.knex, config);
    assert.deepEqual([status.max_per_second, status.partner_max_per_second, status.rate_in_force], [4, 10, 4]);
    assert.equal((await partnerEndpoint(db.knex, config)).rate_in_force, 4);
    // Above the deployment's cap (now 4): refused with the cap named, nothing changed.
    await assert.rejects(
      limitEndpoint({ knex: db.knex, config, logger }, app, { max_per_second: 5 }),
      (error: unknown) => {
        assert.ok(error instanceof InvalidRequestError);
        assert.equal(error.detail, "max_per_second is above the deployment's cap of 4 per second.");
        return true;
      },
    );
    const reset = await limitEndpoint({ knex: db.knex, config, logger }, app, { max_per_second: null });
    assert.deepEqual([reset.max_per_second, reset.rate_in_force], [null, 4]);
  });

  it("a partner's pause holds as an operator's; its resume never ends an operator's, whose resume ends both", async () => {
    const config = configFor();
    const { deliver } = activitiesFor(config);
    const logger = capturingLogger().logger;
    const app = { actor: 'app:pause-app' };
    const paused = await pauseEndpoint({ knex: db.knex, config, logger }, app, { reason: 'deploying v2' });
    assert.equal(paused.state, 'paused');
    assert.deepEqual(
      paused.pauses.map((p) => [p.paused_by, p.reason]),
      [['app:pause-app', 'deploying v2']],
    );
    // Pausing again keeps the first pause: idempotent.
    const again = await pauseEndpoint({ knex: db.knex, config, logger }, { actor: 'app:other' }, { reason: 'other' });
    assert.deepEqual(again.pauses, paused.pauses);
    const input = await stored(1);
    assert.deepEqual(await deliver(input), {
      held: { state: 'paused', pauseReason: 'deploying v2', ceilingMs: 86_400_000 },
    });
    assert.deepEqual(
      { ...(await row(input.webhookId)), held_since: undefined },
      { claimed_attempt: 0, held_since: undefined, status: 'pending' },
    );
    assert.equal(postsOf(input.webhookId), 0);
    // The operator's status shows the partner's pause beside its own.
    await pausePartner(db.knex, config, logger, OPERATOR, { reason: 'incident 42' });
    const status = await partnerStatus(db.knex, config);
    assert.deepEqual(
      [status.state, status.reason, status.partner_pause?.paused_by, status.partner_pause?.reason, status.held],
      ['paused', 'incident 42', 'app:pause-app', 'deploying v2', 1],
    );
    await assert.rejects(resumeEndpoint({ knex: db.knex, config, logger }, app), (error: unknown) => {
      assert.ok(error instanceof PausedByOperatorError);
      assert.deepEqual(error.apiBody(), {
        detail:
          'An operator paused deliveries ("incident 42"): only the operator\'s resume ends it, and it ends your ' +
          'pause too.',
        reason: 'paused_by_operator',
      });
      return true;
    });
    assert.equal((await partnerEndpoint(db.knex, config)).pauses.length, 2, 'the 409 changed nothing');
    const resumed = await resumePartner(db.knex, config, logger, OPERATOR);
    assert.deepEqual([resumed.state, resumed.reason, resumed.partner_pause], ['active', null, null]);
    const sent = (await deliver(input)) as DeliveredAttempt;
    assert.deepEqual([sent.outcome.attempt, postsOf(input.webhookId)], [1, 1]);
    // The partner's own resume ends its own pause.
    await pauseEndpoint({ knex: db.knex, config, logger }, app, { reason: 'again' });
    assert.equal((await resumeEndpoint({ knex: db.knex, config, logger }, app)).state, 'active');
  });

  it('an operator changes the cap at run time; bad requests are refused with the field named', async () => {
    const config = configFor({ PARTNER_MAX_PER_SECOND: '50' });
    const logger = capturingLogger().logger;
    assert.deepEqual(
      [
        (await partnerStatus(db.knex, config)).max_per_second,
        (await partnerStatus(db.knex, config)).max_per_second_source,
      ],
      [50, 'configuration'],
    );
    const limited = await limitPartner(db.knex, config, logger, OPERATOR, { max_per_second: 7 });
    assert.deepEqual([limited.max_per_second, limited.max_per_second_source], [7, 'operator']);
    const reset = await limitPartner(db.knex, config, logger, OPERATOR, { max_per_second: null });
    assert.deepEqual([reset.max_per_second, reset.max_per_second_source], [50, 'configuration']);
    await assert.rejects(limitPartner(db.knex, config, logger, OPERATOR, { max_per_second: 0 }), (error: unknown) => {
      assert.ok(error instanceof InvalidRequestError);
      assert.deepEqual(
        error.errors.map((e) => e.path),
        ['max_per_second'],
      );
      return true;
    });
    await assert.rejects(pausePartner(db.knex, config, logger, OPERATOR, { reason: '  ' }), InvalidRequestError);
    await assert.rejects(
      pausePartner(db.knex, config, logger, OPERATOR, { reason: 'x', extra: 1 }),
      InvalidRequestError,
    );
    assert.equal((await partnerStatus(db.knex, config)).state, 'active', 'a refused pause changes nothing');
  });
});
