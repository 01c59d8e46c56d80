// Per-entity ordering on Temporal's time-skipping test server, with the real retry schedule (10 s, 100 s and
// 1000 s timers, not compressed): a key's head fails all four attempts while a second webhook of its key waits.
// With WEBHOOK_ORDERING_ON_FAILURE=skip the second goes right after the fourth attempt, one gap recorded; with
// `block` it waits, an hour and more, until an operator's `ordering skip`. Another key is never delayed.
// Times are workflow times, read from the histories (an activity's Date.now() stays at wall time).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { temporal } from '@temporalio/proto';
import { loadConfig, type Config } from '../../lib/config';
import { createLogger } from '../../lib/logger';
import { dataAtRest } from '../../lib/at-rest';
import { orderingGaps } from '../../lib/metrics';
import { startWebhook, type StartedWebhook } from '../../application/ingestion/start-webhook';
import { webhookIds } from '../../application/ingestion/ids';
import { decideBlockedKey } from '../../application/ordering/ordering-operator';
import { createTemporalGateway, type TemporalGateway } from '../../temporal/gateway';
import { webhookStatusQuery } from '../../workflows/webhooks/messages';
import type { WebhookEventInput } from '../../events/envelope';
import type { DeliverySummary } from '../../workflows/types';
import jobNew from '../fixtures/events/job-new.json';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { eventually } from '../support/eventually';
import { sendsOf } from '../support/history-timing';
import { OPERATOR } from '../support/operator';
import { createTimeSkippingEnvironment, startTestWorker, type TestWorker } from '../support/temporal';
import { startPartnerServer, type PartnerServer } from '../support/partner-server';
import { PARTNER_TOKEN } from '../support/tokens';

type History = temporal.api.history.v1.IHistory;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const { EventType } = temporal.api.enums.v1;

/** The whole schedule: the 10 s, 100 s and 1000 s timers between the four attempts. */
const SCHEDULE_S = 1110;
const HOUR_MS = 3_600_000;
/** "Right after" and "without delay" on the workflow clock: it runs at wall speed while time does not skip. */
const PROMPT_MS = 3000;

const timeOf = (event: HistoryEvent): number =>
  Number(event.eventTime?.seconds ?? 0) * 1000 + (event.eventTime?.nanos ?? 0) / 1e6;
const eventOf = (history: History, type: temporal.api.enums.v1.EventType): HistoryEvent => {
  const found = (history.events ?? []).filter((e) => e.eventType === type);
  assert.equal(found.length, 1, `one ${EventType[type]} event`);
  return found[0];
};

for (const onFailure of ['skip', 'block'] as const) {
  describe(`a key's head failing finally on the time-skipping test server (WEBHOOK_ORDERING_ON_FAILURE=${onFailure})`, function () {
    this.timeout(120_000);
    // A server of its own: after a result() the test server's clock may jump to far timers (notes: about 10 years).
    let env: TestWorkflowEnvironment;
    let db: TestDatabase;
    let partner: PartnerServer;
    let worker: TestWorker;
    let gateway: TemporalGateway;
    let config: Config;
    /** Webhook ids the partner answers 503; any other gets 204 at once, so no attempt holds the clock. */
    const failing = new Set<string>();

    before(async () => {
      env = await createTimeSkippingEnvironment();
      db = await createTestDatabase();
      partner = await startPartnerServer((req, res) =>
        res.writeHead(failing.has(String(req.headers['webhook-id'])) ? 503 : 204).end(),
      );
      config = loadConfig({
        TEMPORAL_ADDRESS: env.address,
        TEMPORAL_TASK_QUEUE: `ordering-ts-${randomUUID()}`,
        PARTNER_ACCESS_TOKEN: PARTNER_TOKEN,
        PARTNER_ENDPOINT: partner.url,
        PARTNER_TIMEOUT_MS: '1000',
        WEBHOOK_ORDERING: 'entity',
        WEBHOOK_ORDERING_ON_FAILURE: onFailure,
      });
      // The activities wake the next webhook of a key through the worker's own connection: the test server's. No
      // ordering sweep runs, so every wake here is that signal.
      worker = await startTestWorker({ config, knex: db.knex, logger: createLogger('silent') }, env.nativeConnection);
      // The API's and the CLI's way to Temporal, for `ordering skip`.
      gateway = createTemporalGateway(config, createLogger('silent'));
    });

    after(async () => {
      await gateway?.close();
      await worker?.stop();
      await partner?.close();
      await db?.drop();
      await env?.teardown();
    });

    const jobEvent = (jobId: string, action: 'new' | 'update') =>
      ({
        ...structuredClone(jobNew),
        action,
        event_id: `ordering-ts-${randomUUID()}`,
        data: { ...structuredClone(jobNew.data), job: { ...jobNew.data.job, id: jobId } },
      }) as WebhookEventInput;
    const start = (event: WebhookEventInput) =>
      startWebhook(env.client, event, {
        taskQueue: config.TEMPORAL_TASK_QUEUE,
        sendTimeoutMs: 1000,
        ordering: 'entity',
      });
    const postsOf = (webhookId: string) => partner.requests.filter((r) => r.headers['webhook-id'] === webhookId);
    const stateOf = async (webhook: StartedWebhook) =>
      (await env.client.workflow.getHandle(webhook.workflowId).query(webhookStatusQuery)).state;
    const historyOf = (webhook: StartedWebhook) => env.client.workflow.getHandle(webhook.workflowId).fetchHistory();
    const gapsCounted = async () => (await orderingGaps.get()).values[0]?.value ?? 0;

    it(`${onFailure === 'skip' ? 'sends the next webhook of the key right after the fourth attempt' : 'holds the key after the fourth attempt until `ordering skip`'}, one gap; another key goes at once`, async () => {
      const gapsBefore = await gapsCounted();
      const jobA = `j-${randomUUID()}`;
      const headEvent = jobEvent(jobA, 'new');
      failing.add(webhookIds(headEvent).webhookId);
      const head = await start(headEvent);
      await eventually('the head attempted', async () => postsOf(head.webhookId).length === 1);
      const second = await start(jobEvent(jobA, 'update'));
      await eventually('the second webhook of key A queued', async () => (await stateOf(second)) === 'queued');

      // 50 s into the head's schedule (between its second and third attempts), key B's two webhooks arrive. A
      // run started through startWebhook takes its place in the lane at its first attempt, not at its start: the
      // second is started once the first has settled, so their order is the order of their starts.
      await env.sleep(50_000);
      const jobB = `j-${randomUUID()}`;
      const settled = (webhook: StartedWebhook) => async () =>
        (await db
          .knex('ordering_places')
          .where({ webhook_id: webhook.webhookId })
          .whereNotNull('settled_at')
          .first()) !== undefined;
      const others = [await start(jobEvent(jobB, 'new'))];
      await eventually("key B's first settled", settled(others[0]));
      others.push(await start(jobEvent(jobB, 'update')));
      await eventually("key B's second settled", settled(others[1]));

      const secondHandle = env.client.workflow.getHandle(second.workflowId);
      let decidedAt: number | undefined;
      if (onFailure === 'skip') {
        // Waiting on the second's result lets the server skip through the head's timers.
        assert.equal(((await secondHandle.result()) as DeliverySummary).status, 'delivered');
      } else {
        // Past the fourth attempt (at 1110 s), then an hour more: the key stays blocked and the second unsent.
        await env.sleep((SCHEDULE_S + 90) * 1000);
        await eventually('the head blocked', async () => (await stateOf(head)) === 'blocked');
        await env.sleep(HOUR_MS);
        assert.equal(await stateOf(head), 'blocked');
        assert.equal(await stateOf(second), 'queued');
        assert.equal(postsOf(second.webhookId).length, 0, 'nothing behind the blocked head was sent');
        assert.equal(await gapsCounted(), gapsBefore, 'no gap before the decision');
        const key = `job:${jobA}`;
        assert.deepEqual(await decideBlockedKey(db.knex, dataAtRest(config), gateway, OPERATOR, { key }, 'skip'), {
          key,
          webhook_id: head.webhookId,
          decision: 'skip',
        });
        assert.equal(((await secondHandle.result()) as DeliverySummary).status, 'delivered');
        decidedAt = timeOf(eventOf(await historyOf(head), EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED));
      }
      const headSummary: DeliverySummary = await env.client.workflow.getHandle(head.workflowId).result();
      assert.equal(headSummary.status, 'failed');
      assert.deepEqual(
        headSummary.attempts.map((a) => a.httpStatus),
        [503, 503, 503, 503],
      );

      // The partner saw key A's head four times, then the second once; key B's two in order.
      const seen = (webhookId: string) => postsOf(webhookId).map((r) => Number(r.headers['webhook-sequence']));
      assert.deepEqual([seen(head.webhookId), seen(second.webhookId)], [[1, 1, 1, 1], [2]]);
      assert.deepEqual(
        others.map((w) => seen(w.webhookId)),
        [[1], [2]],
      );

      // One gap: the head's place, its lane's count and the metric.
      const [place] = (
        await db.knex.raw(
          'SELECT p.gap, l.gaps, w.status FROM ordering_places p JOIN ordering_lanes l ON l.id = p.lane_id JOIN webhook_events w ON w.id = p.webhook_id WHERE p.webhook_id = ?',
          [head.webhookId],
        )
      ).rows;
      assert.deepEqual(place, { gap: true, gaps: 1, status: 'failed' });
      assert.equal(await gapsCounted(), gapsBefore + 1);
      const rest = await db.knex.raw(
        'SELECT p.gap, w.status FROM ordering_places p JOIN webhook_events w ON w.id = p.webhook_id WHERE p.webhook_id = ANY(?::uuid[])',
        [[second, ...others].map((w) => w.webhookId)],
      );
      assert.deepEqual(rest.rows, Array(3).fill({ gap: false, status: 'delivered' }));

      // Workflow times. The head's four attempts span the schedule.
      const headSends = sendsOf(await historyOf(head));
      assert.equal(headSends.length, 4);
      const headSpanMs = headSends[3].endedAt - headSends[0].startedAt;
      assert.ok(headSpanMs >= SCHEDULE_S * 1000, `the head's attempts span ${headSpanMs} ms`);
      // The second's first attempt only found it queued; its POST is its second attempt, after the wake.
      const secondHistory = await historyOf(second);
      const secondSends = sendsOf(secondHistory);
      assert.equal(secondSends.length, 2);
      const [queuedTry, post] = secondSends;
      const woken = timeOf(eventOf(secondHistory, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED));
      assert.ok(queuedTry.endedAt <= woken && woken <= post.startedAt);
      // The wake leaves from inside the head's fourth attempt, before its workflow task records it: the second's
      // POST may start a few ms before that record, never before the attempt began, and reaches the partner after it.
      const afterLast = post.startedAt - headSends[3].endedAt;
      assert.ok(post.startedAt >= headSends[3].startedAt);
      const order = (webhookId: string) => partner.requests.findLastIndex((r) => r.headers['webhook-id'] === webhookId);
      assert.ok(order(second.webhookId) > order(head.webhookId));
      let afterDecision: number | undefined;
      if (decidedAt === undefined) {
        assert.ok(
          Math.abs(afterLast) <= PROMPT_MS,
          `the second POSTed ${afterLast} ms after the head's fourth attempt`,
        );
      } else {
        afterDecision = post.startedAt - decidedAt;
        assert.ok(
          afterLast >= HOUR_MS,
          `the second POSTed ${afterLast} ms after the head's fourth attempt: not before the decision`,
        );
        assert.ok(
          afterDecision >= 0 && afterDecision <= PROMPT_MS,
          `the second POSTed ${afterDecision} ms after the skip`,
        );
      }

      // Key B: started while the head was between attempts, each delivered within moments of its start.
      const othersDelay: number[] = [];
      for (const other of others) {
        const history = await historyOf(other);
        const startedAt = timeOf(eventOf(history, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED));
        const sends = sendsOf(history);
        assert.equal(sends.length, 1, 'never queued');
        const [delivered] = sends;
        assert.ok(
          startedAt > headSends[1].endedAt && delivered.endedAt < headSends[2].startedAt,
          "key B went between the head's second and third attempts",
        );
        othersDelay.push(delivered.endedAt - startedAt);
      }
      assert.ok(
        othersDelay.every((d) => d >= 0 && d <= PROMPT_MS),
        `key B delivered ${othersDelay.join(' and ')} ms after their starts`,
      );
      console.log(
        `      ${onFailure}: head's attempts span ${(headSpanMs / 1000).toFixed(1)} s; the second's POST started ${afterLast} ms after the record of its fourth` +
          `${afterDecision === undefined ? '' : ` (${afterDecision} ms after the skip)`}; key B delivered ${othersDelay.join(' and ')} ms after their starts`,
      );
    });
  });
}
