import {
  condition,
  log,
  patched,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { WebhookActivities } from '../../activities/webhooks/delivery';
import type { AttemptTrigger } from '../../lib/vocabulary';
import { WEBHOOK_STATUS } from '../../temporal/search-attributes';
import {
  orderingDecisionUpdate,
  orderingTurnSignal,
  partnerReleasedSignal,
  retryNowUpdate,
  webhookStatusQuery,
} from './messages';
import {
  MAX_ATTEMPTS,
  RETRY_DELAYS_MS,
  type AttemptRecord,
  type BlockedDecision,
  type PartnerHold,
  type QueuedAttempt,
} from '../../lib/delivery';
import { recordsTaskQueue, type DeliverWebhookInput, type DeliveryState } from '../types';

export const retrySummary = (retry: number, delayMs: number): string =>
  `retry ${retry} of ${MAX_ATTEMPTS - 1} in ${delayMs / 1000} s`;

const HOLD_WORDS: Record<PartnerHold['state'], string> = {
  paused: 'partner paused by an operator',
  tripped: 'partner breaker tripped (the partner keeps failing)',
  throttled: 'partner asked to wait (Retry-After)',
};

/** What Temporal UI shows of a held delivery: why, and the latest it waits until. */
export const holdSummary = (hold: PartnerHold, ceilingAt: string): string =>
  `held: ${HOLD_WORDS[hold.state]}${hold.pauseReason ? ` (${hold.pauseReason})` : ''}; the attempt waits for ` +
  `the hold to end, at the latest until ${ceilingAt}`;

/** The patch of per-entity ordering: a delivery that queues behind an earlier webhook of its key. */
export const ENTITY_ORDERING_PATCH = 'entity-ordering';

/**
 * The patch that sends a retried event_id's first accepted ordering key on every attempt: the key its lane keeps,
 * which the first attempt returns when the workflow's input brought another.
 */
export const LANE_KEY_PATCH = 'ordering-key-of-lane';

/** What Temporal UI shows of a queued delivery. */
export const queuedSummary = (behind: { readonly webhookId: string; readonly sequence: number }): string =>
  `waiting for webhook ${behind.webhookId}, sequence ${behind.sequence} of its key`;

/** What Temporal UI shows of a blocked head. */
export const BLOCKED_SUMMARY =
  'blocked: failed finally; its key waits until an operator runs `ordering skip` or `ordering retry`';

/** The validator's answer to an ordering decision for a head that is not blocked; the client maps it to 409. */
export const NOT_BLOCKED = 'the delivery is not a blocked head';

/** The validator's answer to a retry-now that finds nothing to cut short; the client maps it to 409. */
export const NOT_WAITING = 'the delivery is not waiting for a retry';

/** When the next attempt starts, and what started it. */
export interface NextAttempt {
  readonly scheduledAt: string;
  readonly trigger: AttemptTrigger;
}

/**
 * Where one delivery stands: the attempts so far, the state the status query answers and `WebhookStatus`
 * shows, and the durable wait between two attempts, which an operator's retry-now update cuts short.
 */
export function trackDelivery(input: DeliverWebhookInput) {
  const attempts: AttemptRecord[] = [];
  let state: DeliveryState = 'sending';
  let nextAttemptAt: string | null = null;
  let retryRequested = false;
  let released = false;
  /** Time held so far, against PARTNER_HOLD_CEILING_MS. */
  let heldMs = 0;
  let pastHoldCeiling = false;
  setHandler(partnerReleasedSignal, () => {
    released = true;
  });
  let decision: BlockedDecision | undefined;
  setHandler(
    orderingDecisionUpdate,
    (asked) => {
      decision = asked;
      return { decision: asked };
    },
    {
      validator: (asked) => {
        if (state !== 'blocked' || decision !== undefined) throw new Error(NOT_BLOCKED);
        if (asked !== 'skip' && asked !== 'retry') throw new Error('the decision is skip or retry');
      },
    },
  );
  /** Set by a wake from the webhook ahead in the key; a wake before the wait began counts. */
  let turnSignalled = false;
  setHandler(orderingTurnSignal, () => {
    turnSignalled = true;
  });
  setHandler(webhookStatusQuery, () => ({
    webhookId: input.webhookId,
    eventId: input.eventId,
    state,
    attempts,
    nextAttemptAt,
  }));
  setHandler(
    retryNowUpdate,
    () => {
      retryRequested = true;
      return { attempt: attempts.length + 1 };
    },
    {
      // Rejected updates leave no trace in the history.
      validator: () => {
        if (state !== 'waiting' || retryRequested) throw new Error(NOT_WAITING);
      },
    },
  );
  /** `WebhookStatus` appears with the first change after the start: a first-try delivery never costs an upsert. */
  let statusShown = false;
  const enter = (next: DeliveryState) => {
    state = next;
    if (next === 'delivered' && !statusShown) return;
    statusShown = true;
    upsertSearchAttributes([{ key: WEBHOOK_STATUS, value: next }]);
  };
  return {
    attempts,
    enter,
    /** Held longer than the ceiling: the attempts go on whatever the partner gate says. */
    pastHoldCeiling: () => pastHoldCeiling,
    /**
     * Waits, without spending the attempt, until the partner recovery signals the end of the hold, or until
     * the delivery has been held for the ceiling in all. One timer and one signal, however long the hold.
     */
    async waitWhileHeld(hold: PartnerHold): Promise<void> {
      const remainingMs = hold.ceilingMs - heldMs;
      if (remainingMs > 0) {
        released = false;
        enter('held');
        const summary = holdSummary(hold, new Date(Date.now() + remainingMs).toISOString());
        setCurrentDetails(summary);
        const startedAt = Date.now();
        released = await condition(() => released, remainingMs, { summary });
        heldMs += Date.now() - startedAt;
        setCurrentDetails('');
        // The attempt's outcome upserts the next status; `sending` lasts no longer than the claim.
        state = 'sending';
        if (released) return;
      }
      pastHoldCeiling = true;
      log.warn('held past the hold ceiling: the delivery goes on with its schedule whatever the partner gate says', {
        heldMs,
      });
    },
    /**
     * Waits, with no timer and spending no attempt, for the wake of the webhook ahead in the key (`behind`);
     * then the first attempt asks its lane again. Versioned: histories from before ordering never queue.
     */
    async waitForTurn(queued: QueuedAttempt['queued']): Promise<void> {
      patched(ENTITY_ORDERING_PATCH);
      enter('queued');
      setCurrentDetails(queuedSummary(queued.behind));
      await condition(() => turnSignalled);
      turnSignalled = false;
      setCurrentDetails('');
      state = 'sending';
    },
    /**
     * Waits, with no timer, for an operator's decision on a head that failed finally while its key blocks
     * (WEBHOOK_ORDERING_ON_FAILURE=block); the webhooks behind it stay queued meanwhile.
     */
    async waitWhileBlocked(): Promise<BlockedDecision> {
      patched(ENTITY_ORDERING_PATCH);
      enter('blocked');
      setCurrentDetails(BLOCKED_SUMMARY);
      await condition(() => decision !== undefined);
      const decided = decision!;
      decision = undefined;
      setCurrentDetails('');
      state = 'sending';
      return decided;
    },
    /** Waits out the timer after failed attempt `attempt`, or until an operator's retry-now cancels it. */
    async waitForRetry(attempt: number, retryAfterMs = 0): Promise<NextAttempt> {
      // A partner's Retry-After may only push the next attempt later than its own timer.
      const delayMs = Math.max(RETRY_DELAYS_MS[attempt - 1], retryAfterMs);
      const due = new Date(Date.now() + delayMs).toISOString();
      nextAttemptAt = due;
      enter('waiting');
      const cutShort = await condition(() => retryRequested, delayMs, { summary: retrySummary(attempt, delayMs) });
      retryRequested = false;
      nextAttemptAt = null;
      enter('sending');
      return cutShort
        ? { scheduledAt: new Date().toISOString(), trigger: 'manual' }
        : { scheduledAt: due, trigger: 'schedule' };
    },
    /** An operator's cancel: no next attempt. */
    cancelled() {
      nextAttemptAt = null;
      enter('cancelled');
    },
  };
}

/** The record activities, on the records queue beside `taskQueue`, retried until PostgreSQL answers. */
export const recordActivities = (taskQueue: string) =>
  proxyActivities<WebhookActivities>({
    taskQueue: recordsTaskQueue(taskQueue),
    startToCloseTimeout: '30 seconds',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
  });
