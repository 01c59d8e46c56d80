// The delivery workflow's state (workflows/webhooks/delivery-state.ts) without a Temporal server: trackDelivery
// runs against a stand-in for the few @temporalio/workflow calls that need a running workflow (handlers,
// conditions, search attributes, current details, patches), so every transition, wait, validator and summary is
// checked directly. Replay against the real sandbox stays in test/workflows/.
import assert from 'node:assert/strict';
import * as realWorkflow from '@temporalio/workflow';
import { RETRY_DELAYS_MS, type PartnerHold } from '../../../lib/delivery';
import type { DeliverWebhookInput } from '../../../workflows/types';
import type * as DeliveryStateModule from '../../../workflows/webhooks/delivery-state';

/** A condition the workflow is waiting on: the test ends it by the predicate turning true, or by its timeout. */
interface Waiting {
  readonly timeoutMs?: number;
  readonly summary?: string;
  /** Ends the wait as Temporal would once the predicate holds; false while it does not. */
  check(): boolean;
  /** Ends the wait as its timer firing would. */
  expire(): void;
}

const handlers = new Map<
  string,
  { handler: (...args: unknown[]) => unknown; validator?: (...args: unknown[]) => void }
>();
const waits: Waiting[] = [];
const upserts: string[] = [];
const details: string[] = [];
const patches: string[] = [];

const standIn = {
  ...realWorkflow,
  setHandler(
    definition: { name: string },
    handler: (...args: unknown[]) => unknown,
    options?: { validator?: (...args: unknown[]) => void },
  ) {
    handlers.set(definition.name, { handler, validator: options?.validator });
  },
  condition(predicate: () => boolean, timeoutMs?: number, options?: { summary?: string }): Promise<boolean> {
    // Like Temporal's, a predicate already true ends the wait without blocking.
    if (predicate()) return Promise.resolve(true);
    return new Promise((resolve) => {
      waits.push({
        timeoutMs,
        summary: options?.summary,
        check: () => (predicate() ? (resolve(true), true) : false),
        expire: () => resolve(false),
      });
    });
  },
  upsertSearchAttributes(updates: Array<{ key: { name: string }; value: string }>) {
    for (const { key, value } of updates) upserts.push(`${key.name}=${value}`);
  },
  setCurrentDetails(text: string) {
    details.push(text);
  },
  patched(id: string) {
    patches.push(id);
    return true;
  },
  log: { warn() {}, info() {}, debug() {}, error() {}, trace() {} },
};

/** delivery-state.ts loaded once against the stand-in; the module cache is left as it was found. */
function loadWithStandIn(): typeof DeliveryStateModule {
  const workflowPath = require.resolve('@temporalio/workflow');
  const statePath = require.resolve('../../../workflows/webhooks/delivery-state');
  const saved = { workflow: require.cache[workflowPath], state: require.cache[statePath] };
  require.cache[workflowPath] = {
    id: workflowPath,
    filename: workflowPath,
    loaded: true,
    exports: standIn,
  } as NodeJS.Module;
  delete require.cache[statePath];
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded afresh against the stand-in
    return require(statePath) as typeof DeliveryStateModule;
  } finally {
    require.cache[workflowPath] = saved.workflow;
    if (saved.state) require.cache[statePath] = saved.state;
    else delete require.cache[statePath];
  }
}

const {
  trackDelivery,
  retrySummary,
  holdSummary,
  queuedSummary,
  BLOCKED_SUMMARY,
  NOT_BLOCKED,
  NOT_WAITING,
  ENTITY_ORDERING_PATCH,
} = loadWithStandIn();

const input = {
  webhookId: 'w-1',
  eventId: 'e-1',
  event: { event_type: 'job', action: 'new', data: {} },
} as unknown as DeliverWebhookInput;
const status = () =>
  handlers.get('webhookStatus')!.handler() as {
    state: string;
    nextAttemptAt: string | null;
    webhookId: string;
    eventId: string;
  };
const validate = (name: string, ...args: unknown[]) => handlers.get(name)!.validator!(...args);
/** Lets the workflow code after an ended wait run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
const hold = (state: PartnerHold['state'], ceilingMs: number, pauseReason: string | null = null): PartnerHold => ({
  state,
  ceilingMs,
  pauseReason,
});

describe('the delivery workflow state (trackDelivery)', () => {
  const realNow = Date.now;
  beforeEach(() => {
    for (const list of [waits, upserts, details, patches]) list.length = 0;
    handlers.clear();
    Date.now = () => Date.parse('2026-11-23T10:00:00Z');
  });
  afterEach(() => {
    Date.now = realNow;
  });

  it('starts sending, answers the status query with its ids, and registers its four messages', () => {
    trackDelivery(input);
    assert.deepEqual([...handlers.keys()].sort(), [
      'orderingDecision',
      'orderingTurn',
      'partnerReleased',
      'retryNow',
      'webhookStatus',
    ]);
    assert.deepEqual(status(), {
      webhookId: 'w-1',
      eventId: 'e-1',
      state: 'sending',
      attempts: [],
      nextAttemptAt: null,
    });
  });

  it('shows no WebhookStatus for a first-try delivery, and every change after the first', () => {
    const first = trackDelivery(input);
    first.enter('delivered');
    assert.deepEqual(upserts, []);
    assert.equal(status().state, 'delivered');
    const second = trackDelivery(input);
    second.enter('waiting');
    second.enter('delivered');
    assert.deepEqual(upserts, ['WebhookStatus=waiting', 'WebhookStatus=delivered']);
  });

  it('waits out the timer of each retry, 10 s, 100 s, 1000 s, due then and triggered by the schedule', async () => {
    const delivery = trackDelivery(input);
    for (const [attempt, delayMs] of RETRY_DELAYS_MS.entries()) {
      const next = delivery.waitForRetry(attempt + 1);
      const wait = waits.at(-1)!;
      assert.deepEqual([wait.timeoutMs, wait.summary], [delayMs, retrySummary(attempt + 1, delayMs)]);
      const due = new Date(Date.parse('2026-11-23T10:00:00Z') + delayMs).toISOString();
      assert.deepEqual([status().state, status().nextAttemptAt], ['waiting', due]);
      wait.expire();
      assert.deepEqual(await next, { scheduledAt: due, trigger: 'schedule' });
      assert.deepEqual([status().state, status().nextAttemptAt], ['sending', null]);
    }
    assert.deepEqual(
      waits.map((w) => w.summary),
      ['retry 1 of 3 in 10 s', 'retry 2 of 3 in 100 s', 'retry 3 of 3 in 1000 s'],
    );
  });

  it("waits for a partner's Retry-After when it is longer than the timer, never shorter", async () => {
    const delivery = trackDelivery(input);
    void delivery.waitForRetry(1, 250_000);
    void delivery.waitForRetry(2, 5_000);
    assert.deepEqual(
      waits.map((w) => [w.timeoutMs, w.summary]),
      [
        [250_000, 'retry 1 of 3 in 250 s'],
        [100_000, 'retry 2 of 3 in 100 s'],
      ],
    );
  });

  it('takes a retry-now only while waiting, once, and then makes the next attempt at once, manual', async () => {
    const delivery = trackDelivery(input);
    assert.throws(() => validate('retryNow'), { message: NOT_WAITING });
    const next = delivery.waitForRetry(1);
    validate('retryNow');
    assert.deepEqual(handlers.get('retryNow')!.handler(), { attempt: 1 });
    assert.throws(() => validate('retryNow'), { message: NOT_WAITING });
    assert.equal(waits[0].check(), true);
    const { trigger } = await next;
    assert.equal(trigger, 'manual');
    assert.equal(status().state, 'sending');
  });

  it('holds until the partner recovery releases it, showing why, then sends again within the ceiling', async () => {
    const delivery = trackDelivery(input);
    const held = delivery.waitWhileHeld(hold('paused', 3_600_000, 'maintenance'));
    assert.equal(status().state, 'held');
    assert.deepEqual(upserts, ['WebhookStatus=held']);
    const summary =
      'held: partner paused by an operator (maintenance); the attempt waits for the hold to end, at the latest until 2026-11-23T11:00:00.000Z';
    assert.deepEqual([waits[0].timeoutMs, waits[0].summary, details], [3_600_000, summary, [summary]]);
    assert.equal(waits[0].check(), false);
    handlers.get('partnerReleased')!.handler();
    assert.equal(waits[0].check(), true);
    await held;
    assert.deepEqual([status().state, delivery.pastHoldCeiling(), details.at(-1)], ['sending', false, '']);
  });

  it('goes on past the hold ceiling when no release comes, and at once when the ceiling is spent', async () => {
    const delivery = trackDelivery(input);
    const held = delivery.waitWhileHeld(hold('tripped', 60_000));
    assert.match(waits[0].summary!, /^held: partner breaker tripped \(the partner keeps failing\); /);
    waits[0].expire();
    await held;
    assert.equal(delivery.pastHoldCeiling(), true);
    const spent = trackDelivery(input);
    await spent.waitWhileHeld(hold('throttled', 0));
    assert.deepEqual([spent.pastHoldCeiling(), waits.length], [true, 1]);
  });

  it('queues behind the webhook ahead in its key until its wake, a wake before the wait counting', async () => {
    const delivery = trackDelivery(input);
    handlers.get('orderingTurn')!.handler();
    await delivery.waitForTurn({ sequence: 5, behind: { webhookId: 'w-0', sequence: 4 } });
    assert.deepEqual(
      [patches, details],
      [[ENTITY_ORDERING_PATCH], [queuedSummary({ webhookId: 'w-0', sequence: 4 }), '']],
    );
    assert.equal(details[0], 'waiting for webhook w-0, sequence 4 of its key');
    assert.equal(waits.length, 0);
    const again = delivery.waitForTurn({ sequence: 6, behind: { webhookId: 'w-5', sequence: 5 } });
    assert.deepEqual([status().state, waits[0].check(), waits[0].timeoutMs], ['queued', false, undefined]);
    handlers.get('orderingTurn')!.handler();
    assert.equal(waits[0].check(), true);
    await again;
    assert.equal(status().state, 'sending');
  });

  it("takes an operator's skip or retry only for a blocked head, once", async () => {
    const delivery = trackDelivery(input);
    assert.throws(() => validate('orderingDecision', 'skip'), { message: NOT_BLOCKED });
    const blocked = delivery.waitWhileBlocked();
    assert.deepEqual([status().state, details], ['blocked', [BLOCKED_SUMMARY]]);
    assert.throws(() => validate('orderingDecision', 'later'), { message: 'the decision is skip or retry' });
    validate('orderingDecision', 'retry');
    assert.deepEqual(handlers.get('orderingDecision')!.handler('retry'), { decision: 'retry' });
    assert.throws(() => validate('orderingDecision', 'skip'), { message: NOT_BLOCKED });
    assert.equal(waits[0].check(), true);
    assert.equal(await blocked, 'retry');
    await settle();
    assert.equal(status().state, 'sending');
  });

  it("ends an operator's cancel with no next attempt", () => {
    const delivery = trackDelivery(input);
    void delivery.waitForRetry(1);
    delivery.cancelled();
    assert.deepEqual(
      [status().state, status().nextAttemptAt, upserts.at(-1)],
      ['cancelled', null, 'WebhookStatus=cancelled'],
    );
  });
});

describe("the delivery's summaries in Temporal UI", () => {
  it('say which retry comes and when, in seconds', () => {
    assert.deepEqual(
      [retrySummary(1, 10_000), retrySummary(3, 1_000_000), retrySummary(2, 1_500)],
      ['retry 1 of 3 in 10 s', 'retry 3 of 3 in 1000 s', 'retry 2 of 3 in 1.5 s'],
    );
  });

  it('say why a delivery is held, with the reason of a pause, and until when', () => {
    assert.equal(
      holdSummary(hold('throttled', 1), '2026-11-23T11:00:00.000Z'),
      'held: partner asked to wait (Retry-After); the attempt waits for the hold to end, at the latest until 2026-11-23T11:00:00.000Z',
    );
    assert.equal(
      holdSummary(hold('paused', 1, ''), 'T'),
      'held: partner paused by an operator; the attempt waits for the hold to end, at the latest until T',
    );
  });
});
