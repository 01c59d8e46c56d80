// Per-entity ordering on a real `temporal server start-dev`, with the service's worker and a partner server on
// loopback: each key's webhooks reach the partner in sequence order, one at a time, under failing first tries;
// a final failure leaves one recorded gap and the key goes on; a cancelled head lets the next one go.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { ApiServer } from '../../api/server';
import jobNew from '../fixtures/events/job-new.json';
import type { TestDatabase } from '../support/database';
import { eventually } from '../support/eventually';
import type { PartnerServer } from '../support/partner-server';
import { orderingPartnerHandler, type OrderingArrival } from '../support/ordering-partner';
import { startWebhookStack, type WebhookStack } from '../support/webhook-stack';
import { webhookStatusQuery } from '../../workflows/webhooks/messages';
import { sweepOrdering } from '../../application/ordering/ordering-sweep';
import { createLogger } from '../../lib/logger';
import { webhookIds } from '../../application/ingestion/ids';
import { settlePlace } from '../../store/ordering/lanes';
import { startWebhook } from '../../application/ingestion/start-webhook';
import { ensureSearchAttributes } from '../../temporal/register-search-attributes';
import type { WebhookEventInput } from '../../events/envelope';
import { metricsRegistry } from '../../lib/metrics';
import { postWebhook } from '../support/api';
import { INTERNAL_TOKEN } from '../support/tokens';

/** partner_service_ordering_gaps_total of this process. */
const gapsTotal = async () =>
  (await metricsRegistry.getSingleMetric('partner_service_ordering_gaps_total')!.get()).values[0]?.value ?? 0;

const logger = createLogger('silent');

describe('per-entity ordering on the dev server (WEBHOOK_ORDERING=entity)', function () {
  this.timeout(240_000);
  let stack: WebhookStack;
  let db: TestDatabase;
  let partner: PartnerServer;
  let api: ApiServer;
  let client: Client;
  const arrivals: OrderingArrival[] = [];
  /** The partner's answer to one POST, by webhook-id and the number of POSTs of it so far. */
  let answerFor: (webhookId: string, tries: number) => number = () => 204;
  const tries = new Map<string, number>();

  before(async () => {
    stack = await startWebhookStack({
      env: {
        INTERNAL_API_TOKEN: INTERNAL_TOKEN,
        WEBHOOK_ORDERING: 'entity',
        PARTNER_MAX_CONCURRENCY: '50',
        PARTNER_MAX_PER_SECOND: '100000',
        PARTNER_BREAKER_FAILURES: '10000',
      },
      // 10 s, 100 s and 1000 s become 10, 100 and 1000 ms: a final failure takes about a second.
      compressTimers: true,
      // Jittered latency, so that concurrent keys interleave and a second POST of one key would overlap.
      partnerHandler: orderingPartnerHandler(arrivals, tries, (webhookId, n) => ({
        status: answerFor(webhookId, n),
        delayMs: 2 + Math.floor(Math.random() * 15),
      })),
    });
    ({ db, partner, api, client } = stack);
  });

  after(() => stack?.close());

  beforeEach(() => {
    arrivals.length = 0;
    tries.clear();
    partner.requests.length = 0;
    answerFor = () => 204;
  });

  const post = async (body: unknown) => {
    const response = await postWebhook(api.url, INTERNAL_TOKEN, body);
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const jobEvent = (jobId: string, action = 'update') => ({
    ...structuredClone(jobNew),
    action,
    event_id: `ordering-${randomUUID()}`,
    data: { ...structuredClone(jobNew.data), job: { ...jobNew.data.job, id: jobId } },
  });
  /** A key whose head keeps failing (it waits its compressed timers until stopped), and a second webhook queued behind it. */
  const failingHeadWithOneQueued = async () => {
    const jobId = `j-${randomUUID()}`;
    const first = await post(jobEvent(jobId, 'new'));
    const headId = String(first.body.webhook_id);
    answerFor = (webhookId) => (webhookId === headId ? 503 : 204);
    await eventually('the head attempted', async () => arrivals.some((a) => a.webhookId === headId));
    const second = await post(jobEvent(jobId));
    const handle = client.workflow.getHandle(String(second.body.workflow_id));
    await eventually(
      'the second webhook queued',
      async () => (await handle.query(webhookStatusQuery)).state === 'queued',
      30_000,
    );
    return { jobId, first, headId, second, handle };
  };
  const finished = (count: number) =>
    eventually(
      `${count} webhooks finished`,
      async () => {
        const [{ n }] = (
          await db.knex.raw(`SELECT count(*)::int AS n FROM webhook_events WHERE finished_at IS NOT NULL`)
        ).rows as Array<{ n: number }>;
        return n >= count;
      },
      200_000,
    );

  it('delivers each key in sequence order, one POST at a time, with no gap, when a fifth of first tries fail', async () => {
    const before = await finishedCount(db);
    const keys = Array.from({ length: 12 }, () => `j-${randomUUID()}`);
    const perKey = 8;
    const failing = new Set<string>();
    answerFor = (webhookId, n) => (n === 1 && failing.has(webhookId) ? 503 : 204);
    // Each key's webhooks are accepted one after the other; the keys go at once.
    const accepted = new Map<string, string[]>();
    await Promise.all(
      keys.map(async (jobId) => {
        for (let i = 0; i < perKey; i++) {
          const { status, body } = await post(jobEvent(jobId, i === 0 ? 'new' : 'update'));
          assert.equal(status, 202, JSON.stringify(body));
          const webhookId = String(body.webhook_id);
          if (Math.random() < 0.2) failing.add(webhookId);
          accepted.set(`job:${jobId}`, [...(accepted.get(`job:${jobId}`) ?? []), webhookId]);
        }
      }),
    );
    await finished(before + keys.length * perKey);
    for (const [key, webhookIds] of accepted) {
      const ofKey = arrivals.filter((a) => a.key === key).sort((a, b) => a.startedMs - b.startedMs);
      const delivered = ofKey.filter((a) => a.status === 204);
      assert.deepEqual(
        delivered.map((a) => a.webhookId),
        webhookIds,
        `${key}: delivered in the order accepted, each once`,
      );
      assert.deepEqual(
        delivered.map((a) => a.sequence),
        webhookIds.map((_, i) => i + 1),
        `${key}: sequence 1 to ${perKey}, no gap`,
      );
      // At most one POST of a key in flight: each starts after the one before it ended.
      for (let i = 1; i < ofKey.length; i++)
        assert.ok(ofKey[i].startedMs >= ofKey[i - 1].endedMs, `${key}: two POSTs in flight at once`);
    }
    assert.ok(failing.size > 0, 'some first tries failed');
    const [{ gaps }] = (await db.knex.raw('SELECT coalesce(sum(gaps), 0)::int AS gaps FROM ordering_lanes'))
      .rows as Array<{ gaps: number }>;
    assert.equal(gaps, 0);
  });

  it('records one gap when a head fails finally, and the next webhook of the key goes right after', async () => {
    const jobId = `j-${randomUUID()}`;
    const first = await post(jobEvent(jobId, 'new'));
    const headId = String(first.body.webhook_id);
    answerFor = (webhookId) => (webhookId === headId ? 500 : 204);
    const second = await post(jobEvent(jobId));
    const secondId = String(second.body.webhook_id);
    await eventually(
      'the second webhook delivered',
      async () => arrivals.some((a) => a.webhookId === secondId && a.status === 204),
      60_000,
    );
    const ofKey = arrivals.filter((a) => a.key === `job:${jobId}`).sort((a, b) => a.startedMs - b.startedMs);
    assert.deepEqual(
      ofKey.map((a) => [a.sequence, a.status]),
      [
        [1, 500],
        [1, 500],
        [1, 500],
        [1, 500],
        [2, 204],
      ],
    );
    const [place] = (
      await db.knex.raw(
        'SELECT p.gap, l.gaps FROM ordering_places p JOIN ordering_lanes l ON l.id = p.lane_id WHERE p.webhook_id = ?',
        [headId],
      )
    ).rows as Array<{ gap: boolean; gaps: number }>;
    assert.deepEqual(place, { gap: true, gaps: 1 });
  });

  it("queues a webhook behind its key's head without a timer, and a cancelled head lets it go", async () => {
    const { jobId, first, headId, second, handle } = await failingHeadWithOneQueued();
    // Temporal UI: listed by WebhookStatus = "queued", its wait named by the webhook ahead.
    await eventually(
      'WebhookStatus queued',
      async () => JSON.stringify((await handle.describe()).searchAttributes.WebhookStatus) === '["queued"]',
      30_000,
    );
    const metadata = (await handle.query('__temporal_workflow_metadata')) as { currentDetails?: string };
    assert.equal(metadata.currentDetails, `waiting for webhook ${headId}, sequence 1 of its key`);
    const history = await handle.fetchHistory();
    const timers = (history.events ?? []).filter((e) => e.timerStartedEventAttributes);
    assert.equal(timers.length, 0, 'a queued webhook holds no timer');
    assert.ok(
      !arrivals.some((a) => a.webhookId === String(second.body.webhook_id)),
      'nothing of the queued webhook was sent',
    );
    // The operator's view of the key: the head waits for its retry, one webhook waits behind it.
    const status = await fetch(`${api.url}/internal/v1/ordering`, {
      headers: { authorization: `Bearer ${INTERNAL_TOKEN}` },
    });
    assert.equal(status.status, 200);
    const { keys } = (await status.json()) as {
      keys: Array<{
        key: string;
        head: { webhook_id: string; sequence: number; state: string; attempts: number };
        queued: number;
        oldest_queued_seconds: number;
        gaps: number;
      }>;
    };
    const mine = keys.find((k) => k.key === `job:${jobId}`)!;
    assert.deepEqual([mine.head.webhook_id, mine.head.sequence, mine.queued, mine.gaps], [headId, 1, 1, 0]);
    // With its timers compressed, the failing head is between two attempts or making one.
    assert.ok(['attempting', 'waiting'].includes(mine.head.state), mine.head.state);
    assert.ok(mine.head.attempts >= 1);
    assert.ok(mine.oldest_queued_seconds >= 0 && mine.oldest_queued_seconds < 60, String(mine.oldest_queued_seconds));
    const refused = await fetch(`${api.url}/internal/v1/ordering?limit=0`, {
      headers: { authorization: `Bearer ${INTERNAL_TOKEN}` },
    });
    assert.equal(refused.status, 400);
    await client.workflow.getHandle(String(first.body.workflow_id)).cancel();
    await eventually(
      'the second webhook delivered',
      async () => arrivals.some((a) => a.webhookId === String(second.body.webhook_id) && a.status === 204),
      30_000,
    );
    const delivered = arrivals.find((a) => a.webhookId === String(second.body.webhook_id))!;
    assert.equal(delivered.sequence, 2);
  });

  it('settles a head terminated in Temporal (a gap) and wakes the webhook behind it, in the ordering sweep', async () => {
    const { first, headId, second } = await failingHeadWithOneQueued();
    // A terminated run runs no code: nothing settles its place, so without the sweep the key would wait forever.
    await client.workflow.getHandle(String(first.body.workflow_id)).terminate('an operator in Temporal UI');
    assert.deepEqual(await sweepOrdering({ knex: db.knex, logger, gateway: stack.gateway }, 0), {
      settled: 1,
      woken: 1,
    });
    await eventually(
      'the second webhook delivered',
      async () => arrivals.some((a) => a.webhookId === String(second.body.webhook_id) && a.status === 204),
      30_000,
    );
    const [head] = (
      await db.knex.raw(
        'SELECT w.status, p.gap FROM webhook_events w JOIN ordering_places p ON p.webhook_id = w.id WHERE w.id = ?',
        [headId],
      )
    ).rows;
    assert.deepEqual(head, { status: 'terminated', gap: true });
    // Settling again (a second sweep, a retried activity) records no second gap.
    const gapsCounted = await gapsTotal();
    assert.equal((await settlePlace(db.knex, headId, true)).gapRecorded, false);
    const [lane] = (
      await db.knex.raw(
        'SELECT l.gaps::int AS gaps FROM ordering_lanes l JOIN ordering_places p ON p.lane_id = l.id WHERE p.webhook_id = ?',
        [headId],
      )
    ).rows;
    assert.deepEqual({ lane: lane.gaps, counter: (await gapsTotal()) - gapsCounted }, { lane: 1, counter: 0 });
  });

  it('wakes a queued webhook whose wake was lost, in the ordering sweep', async () => {
    const { first, headId, second } = await failingHeadWithOneQueued();
    const secondId = String(second.body.webhook_id);
    // The head settles, but its wake is lost: as if its worker died between the two.
    await client.workflow.getHandle(String(first.body.workflow_id)).terminate('stands in for a lost worker');
    await db.knex.raw('UPDATE ordering_places SET settled_at = now() WHERE webhook_id = ?', [headId]);
    assert.deepEqual(
      await sweepOrdering({ knex: db.knex, logger, gateway: stack.gateway }, 60_000),
      { settled: 0, woken: 0 },
      'not yet: it has waited less than the sweep allows',
    );
    assert.deepEqual(await sweepOrdering({ knex: db.knex, logger, gateway: stack.gateway }, 0), {
      settled: 0,
      woken: 1,
    });
    await eventually(
      'the second webhook delivered',
      async () => arrivals.some((a) => a.webhookId === secondId && a.status === 204),
      30_000,
    );
  });

  it('gives a repeated event_id no second number, and refuses an ordering_key that is not 1 to 256 characters', async () => {
    const jobId = `j-${randomUUID()}`;
    const event = jobEvent(jobId, 'new');
    assert.equal((await post(event)).status, 202);
    assert.equal((await post(event)).status, 200);
    const next = await post(jobEvent(jobId));
    await eventually(
      'both delivered',
      async () => arrivals.filter((a) => a.key === `job:${jobId}` && a.status === 204).length === 2,
      30_000,
    );
    assert.deepEqual(
      arrivals.filter((a) => a.key === `job:${jobId}`).map((a) => a.sequence),
      [1, 2],
    );
    assert.equal(next.status, 202);

    for (const [orderingKey, message] of [
      ['', 'must be 1 to 256 characters'],
      ['k'.repeat(257), 'must be 1 to 256 characters'],
    ] as const) {
      const refused = await post({ ...jobEvent(jobId), ordering_key: orderingKey });
      assert.equal(refused.status, 400);
      assert.deepEqual(refused.body.errors, [{ path: 'ordering_key', message }]);
    }
    const numeric = await post({ ...jobEvent(jobId), ordering_key: 42 });
    assert.equal(numeric.status, 400);
    assert.deepEqual(
      (numeric.body.errors as Array<{ path: string }>).map((e) => e.path),
      ['ordering_key'],
    );
    const [{ n }] = (
      await db.knex.raw(
        'SELECT count(*)::int AS n FROM ordering_places p JOIN ordering_lanes l ON l.id = p.lane_id WHERE l.last_seq > 2 AND l.key_text = ?',
        [`job:${jobId}`],
      )
    ).rows as Array<{ n: number }>;
    assert.equal(n, 0, 'a refused request takes no number');
  });

  it("sends a redelivery out of band, with its original's key and number", async () => {
    const jobId = `j-${randomUUID()}`;
    const first = await post(jobEvent(jobId, 'new'));
    const firstId = String(first.body.webhook_id);
    await eventually(
      'the first delivered',
      async () => arrivals.some((a) => a.webhookId === firstId && a.status === 204),
      30_000,
    );
    // The key's next webhook fails and waits: a queued one would wait behind it, a redelivery does not.
    const second = await post(jobEvent(jobId));
    answerFor = (webhookId) => (webhookId === String(second.body.webhook_id) ? 503 : 204);
    await eventually(
      'the second attempted',
      async () => arrivals.some((a) => a.webhookId === String(second.body.webhook_id)),
      30_000,
    );
    const response = await fetch(`${api.url}/internal/v1/webhooks/${firstId}/redeliver`, {
      method: 'POST',
      headers: { authorization: `Bearer ${INTERNAL_TOKEN}` },
    });
    assert.equal(response.status, 202, await response.clone().text());
    await eventually(
      'the redelivery arrived',
      async () => arrivals.filter((a) => a.webhookId === firstId).length === 2,
      30_000,
    );
    const redelivered = arrivals.filter((a) => a.webhookId === firstId)[1];
    assert.deepEqual([redelivered.key, redelivered.sequence, redelivered.status], [`job:${jobId}`, 1, 204]);
    await client.workflow.getHandle(String(second.body.workflow_id)).cancel();
  });

  it('costs an ordered first-try delivery no history event and at most 2 statements more than an unordered one', async () => {
    const statements: string[] = [];
    // Only the statements about the measured webhook: other tests' workflows may still record their outcomes.
    let measured = '';
    const count = (query: { sql: string; bindings?: unknown[] }) => {
      if ((query.bindings ?? []).some((value) => value === measured)) statements.push(query.sql);
    };
    const measure = async (body: { event_type: string; action: string; event_id: string }) => {
      measured = webhookIds(body as Parameters<typeof webhookIds>[0]).webhookId;
      statements.length = 0;
      db.knex.on('query', count);
      try {
        const accepted = await post(body);
        assert.equal(accepted.status, 202);
        const handle = client.workflow.getHandle(String(accepted.body.workflow_id));
        await handle.result();
        await eventually(
          'its outcome recorded',
          async () =>
            (await db.knex('webhook_events').where({ id: accepted.body.webhook_id }).first('status')).status ===
            'delivered',
        );
        return { events: (await handle.fetchHistory()).events!.length, statements: statements.length };
      } finally {
        db.knex.off('query', count);
      }
    };
    // An unspecified pair with no entity id in its data is unordered; a job event is ordered by data.job.id. The
    // first delivery warms the caches (the settings of data at rest, the index keys, the gate's row).
    const unorderedEvent = () => ({
      event_type: 'job',
      action: 'update',
      event_id: `ordering-${randomUUID()}`,
      data: { note: 'no job id' },
    });
    await measure(unorderedEvent());
    const unordered = await measure(unorderedEvent());
    const ordered = await measure(jobEvent(`j-${randomUUID()}`));
    assert.ok(
      arrivals.some((a) => a.key === undefined),
      'the unordered one had no ordering headers',
    );
    assert.equal(ordered.events, unordered.events, 'history events of a first-try delivery');
    assert.ok(
      ordered.statements - unordered.statements <= 2,
      `${ordered.statements} statements against ${unordered.statements}`,
    );
    console.log(
      `      first try: ${ordered.events} history events either way; ${ordered.statements} statements ordered, ${unordered.statements} unordered`,
    );
  });

  describe('with WEBHOOK_ORDERING_ON_FAILURE=block', () => {
    // The attempts read the configuration at each attempt (config()), so this stack's worker blocks from now on.
    before(() => setOnFailure('block'));
    after(() => setOnFailure('skip'));
    const setOnFailure = (value: 'skip' | 'block') =>
      ((stack.config as { WEBHOOK_ORDERING_ON_FAILURE: string }).WEBHOOK_ORDERING_ON_FAILURE = value);
    const operate = async (path: string, key: unknown) => {
      const response = await fetch(`${api.url}/internal/v1/ordering/${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ key }),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    /** A key whose head fails all four attempts and blocks, with one webhook queued behind it. */
    const blockedKey = async () => {
      const jobId = `j-${randomUUID()}`;
      const first = await post(jobEvent(jobId, 'new'));
      const headId = String(first.body.webhook_id);
      let failing = true;
      answerFor = (webhookId) => (webhookId === headId && failing ? 500 : 204);
      const second = await post(jobEvent(jobId));
      const head = client.workflow.getHandle(String(first.body.workflow_id));
      await eventually(
        'the head blocked',
        async () => (await head.query(webhookStatusQuery)).state === 'blocked',
        30_000,
      );
      return {
        key: `job:${jobId}`,
        headId,
        secondId: String(second.body.webhook_id),
        head,
        stopFailing: () => (failing = false),
      };
    };
    const keyStatus = async (key: string) => {
      const response = await fetch(`${api.url}/internal/v1/ordering?blocked=true`, {
        headers: { authorization: `Bearer ${INTERNAL_TOKEN}` },
      });
      const { keys } = (await response.json()) as {
        keys: Array<{
          key: string;
          head: { webhook_id: string; sequence: number; state: string; attempts: number };
          queued: number;
          gaps: number;
        }>;
      };
      return keys.find((k) => k.key === key);
    };

    it("holds the key after its head's fourth failure, other keys go on, and `skip` records the gap and lets the next go", async () => {
      const { key, headId, secondId, head } = await blockedKey();
      const blocked = (await keyStatus(key))!;
      assert.deepEqual(
        [blocked.head, blocked.queued, blocked.gaps],
        [{ webhook_id: headId, sequence: 1, state: 'blocked', attempts: 4 }, 1, 0],
      );
      // Another key is not delayed by the blocked one.
      const other = await post(jobEvent(`j-${randomUUID()}`, 'new'));
      await eventually(
        'another key delivered',
        async () => arrivals.some((a) => a.webhookId === String(other.body.webhook_id) && a.status === 204),
        10_000,
      );
      await new Promise((resolve) => setTimeout(resolve, 500));
      assert.ok(!arrivals.some((a) => a.webhookId === secondId), 'nothing behind the blocked head was sent');
      assert.equal((await db.knex('webhook_events').where({ id: headId }).first('status')).status, 'pending');

      assert.deepEqual(await operate('skip', 'job:never-used'), { status: 404, body: { detail: 'Not found.' } });
      assert.equal((await operate('skip', '')).status, 400);
      assert.deepEqual(await operate('skip', key), {
        status: 200,
        body: { key, webhook_id: headId, decision: 'skip' },
      });
      assert.equal(((await head.result()) as { status: string }).status, 'failed');
      await eventually(
        'the next webhook delivered',
        async () => arrivals.some((a) => a.webhookId === secondId && a.status === 204),
        30_000,
      );
      assert.equal(arrivals.find((a) => a.webhookId === secondId)!.sequence, 2);
      const [place] = (
        await db.knex.raw(
          'SELECT p.gap, w.status FROM ordering_places p JOIN webhook_events w ON w.id = p.webhook_id WHERE p.webhook_id = ?',
          [headId],
        )
      ).rows;
      assert.deepEqual(place, { gap: true, status: 'failed' });
      assert.equal((await operate('skip', key)).status, 409, 'nothing of the key is blocked any more');
      const trail = await db
        .knex('audit_events')
        .where({ action: 'ordering.skip', target: headId })
        .select('phase', 'outcome');
      assert.deepEqual(trail.map((r: { phase: string }) => r.phase).sort(), ['intent', 'outcome']);
    });

    it('`retry` makes one more attempt of the blocked head now; delivered, the key goes on with no gap', async () => {
      const { key, headId, secondId, head, stopFailing } = await blockedKey();
      assert.equal((await operate('skip', 'x'.repeat(257))).status, 400);
      stopFailing();
      assert.deepEqual(await operate('retry', key), {
        status: 202,
        body: { key, webhook_id: headId, decision: 'retry' },
      });
      assert.equal(((await head.result()) as { status: string }).status, 'delivered');
      await eventually(
        'the next webhook delivered',
        async () => arrivals.some((a) => a.webhookId === secondId && a.status === 204),
        30_000,
      );
      const attempts = await db
        .knex('webhook_attempts')
        .where({ webhook_id: headId })
        .orderBy('attempt')
        .select('attempt', 'http_status', 'trigger');
      assert.deepEqual(
        attempts.map((a: { attempt: number; http_status: number }) => [a.attempt, a.http_status]),
        [
          [1, 500],
          [2, 500],
          [3, 500],
          [4, 500],
          [5, 204],
        ],
      );
      assert.equal((attempts[4] as { trigger: string }).trigger, 'manual');
      assert.equal(await keyStatus(key), undefined);
    });
  });

  it('places runs started by another Temporal client at their first attempt: started at once, one POST per key at a time, none waits for the sweep', async () => {
    // startWebhook's runs write their row and place at the first attempt, in one statement whose snapshot predates
    // the lane's lock: asked again once committed, the turn sees the places written beside it, and a settle sees it.
    await ensureSearchAttributes(stack.connection, stack.config.temporal.namespace);
    const keys = Array.from({ length: 10 }, () => `j-${randomUUID()}`);
    const perKey = 3;
    const started = await Promise.all(
      keys.flatMap((jobId) =>
        Array.from({ length: perKey }, () =>
          startWebhook(client, jobEvent(jobId) as WebhookEventInput, {
            taskQueue: stack.config.TEMPORAL_TASK_QUEUE,
            sendTimeoutMs: 2000,
            ordering: 'entity',
          }),
        ),
      ),
    );
    // No sweep runs in this stack: a lost wake would leave its key waiting past this.
    await eventually(
      'every run delivered',
      async () => started.every((s) => arrivals.some((a) => a.webhookId === s.webhookId && a.status === 204)),
      30_000,
    );
    for (const jobId of keys) {
      const ofKey = arrivals.filter((a) => a.key === `job:${jobId}`);
      assert.deepEqual(
        ofKey.map((a) => a.sequence),
        [1, 2, 3],
        `job:${jobId} in sequence order, each once`,
      );
      for (let i = 1; i < ofKey.length; i++)
        assert.ok(
          ofKey[i].startedMs >= ofKey[i - 1].endedMs,
          `job:${jobId}: POST ${i + 1} began after POST ${i} was answered`,
        );
    }
  });

  it("sends the upstream system's own ordering_key, which wins over the derived one", async () => {
    const key = `order-${randomUUID()}`;
    const a = await post({ ...jobEvent(`j-${randomUUID()}`), ordering_key: key });
    const b = await post({ ...jobEvent(`j-${randomUUID()}`), ordering_key: key });
    assert.equal(a.status, 202);
    assert.equal(b.status, 202);
    await eventually(
      'both delivered',
      async () => arrivals.filter((x) => x.key === key && x.status === 204).length === 2,
      30_000,
    );
    assert.deepEqual(
      arrivals.filter((x) => x.key === key).map((x) => [x.webhookId, x.sequence]),
      [
        [a.body.webhook_id, 1],
        [b.body.webhook_id, 2],
      ],
    );
  });
});

async function finishedCount(db: TestDatabase): Promise<number> {
  const [{ n }] = (await db.knex.raw('SELECT count(*)::int AS n FROM webhook_events WHERE finished_at IS NOT NULL'))
    .rows as Array<{ n: number }>;
  return n;
}
