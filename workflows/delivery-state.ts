import { proxyActivities, setHandler, sleep, upsertSearchAttributes } from '@temporalio/workflow';
import type { WebhookActivities } from '../activities';
import { WEBHOOK_STATUS } from '../temporal/search-attributes';
import { webhookStatusQuery } from './queries';
import { MAX_ATTEMPTS, RETRY_DELAYS_MS, recordsTaskQueue, type AttemptRecord, type DeliverWebhookInput, type DeliveryState } from './types';

export const retrySummary = (retry: number, delayMs: number): string =>
  `retry ${retry} of ${MAX_ATTEMPTS - 1} in ${delayMs / 1000} s`;

/**
 * Where one delivery stands, for both workflow shapes: the attempts so far, the state the status query
 * answers and `WebhookStatus` shows, and the durable wait between two attempts.
 */
export function trackDelivery(input: DeliverWebhookInput) {
  const attempts: AttemptRecord[] = [];
  let state: DeliveryState = 'sending';
  let nextAttemptAt: string | null = null;
  setHandler(webhookStatusQuery, () => ({ webhookId: input.webhookId, eventId: input.eventId, state, attempts, nextAttemptAt }));
  const enter = (next: DeliveryState) => {
    state = next;
    upsertSearchAttributes([{ key: WEBHOOK_STATUS, value: next }]);
  };
  return {
    attempts,
    enter,
    get state() {
      return state;
    },
    /** Waits out the timer after failed attempt `attempt`; returns the time the next attempt was due. */
    async waitForRetry(attempt: number): Promise<string> {
      const delayMs = RETRY_DELAYS_MS[attempt - 1];
      const due = new Date(Date.now() + delayMs).toISOString();
      nextAttemptAt = due;
      enter('waiting');
      await sleep(delayMs, { summary: retrySummary(attempt, delayMs) });
      nextAttemptAt = null;
      enter('sending');
      return due;
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
