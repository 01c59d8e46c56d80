import {
  ActivityFailure,
  CancellationScope,
  isCancellation,
  log,
  proxyActivities,
  TimeoutFailure,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import type { WebhookActivities } from '../activities';
import { companyIdOf } from '../events/company-id';
import { recordActivities, trackDelivery } from './delivery-state';
import { COMPANY_ID, WEBHOOK_ACTION, WEBHOOK_EVENT_TYPE, WEBHOOK_STATUS } from '../temporal/search-attributes';
import {
  DEFAULT_SEND_TIMEOUT_MS,
  MAX_ATTEMPTS,
  SEND_TRIES,
  type AttemptOutcome,
  type AttemptRecord,
  type DeliverWebhookInput,
  type DeliverySummary,
  type FinalStatus,
  type WebhookRef,
} from './types';

/** Room beyond the HTTP timeout for connecting, reading 4 KiB of body and reporting back. */
export const SEND_TIMEOUT_MARGIN_MS = 15_000;

/**
 * The schedule of deliverWebhook is the whole retry policy of a POST. Temporal retries the activity once only
 * for a try it lost (a task that never reached a worker, a worker that died); the activity itself refuses to
 * POST again when the lost try had got as far as the POST (see activities/index.ts).
 */
const { sendWebhook } = proxyActivities<WebhookActivities>({
  startToCloseTimeout: DEFAULT_SEND_TIMEOUT_MS + SEND_TIMEOUT_MARGIN_MS,
  retry: { maximumAttempts: SEND_TRIES, initialInterval: '1 second' },
});

/**
 * The first shape of deliverWebhook, kept unchanged for runs that started under it (their histories have no
 * `single-task-delivery` patch marker): a send activity per attempt, and each outcome and the final status
 * written by separate, retried activities. New runs take `deliverWebhookV2`.
 */
export async function deliverWebhookV1(input: DeliverWebhookInput): Promise<DeliverySummary> {
  const { workflowId, runId, taskQueue } = workflowInfo();
  /** Recording is retried until PostgreSQL answers, so an outage delays a record but never loses it. */
  const { recordAttempt, recordOutcome } = recordActivities(taskQueue);
  // Records carry ids and outcomes; the event, already in the workflow input, is repeated only where no row exists.
  const webhook: WebhookRef = { webhookId: input.webhookId, eventId: input.eventId, workflowId, runId, isTest: false };
  const firstRecordOf: WebhookRef = input.eventStored ? webhook : { ...webhook, event: input.event };
  const delivery = trackDelivery(input);

  const companyId = companyIdOf(input.event);
  const identity: SearchAttributeUpdatePair[] = [
    { key: WEBHOOK_EVENT_TYPE, value: input.event.event_type },
    { key: WEBHOOK_ACTION, value: input.event.action },
    { key: WEBHOOK_STATUS, value: delivery.state },
  ];
  if (companyId) identity.push({ key: COMPANY_ID, value: companyId });
  upsertSearchAttributes(identity);

  const records: Promise<void>[] = [];
  // Records run outside cancellation: an operator's cancel must not lose an outcome already known.
  const record = <T>(write: () => Promise<T>) => records.push(CancellationScope.nonCancellable(write).then(() => undefined, recordRejected));
  const finish = async (final: FinalStatus) => {
    await Promise.all(records);
    await CancellationScope.nonCancellable(() => recordOutcome({ webhook, status: final, finishedAt: new Date().toISOString() })).catch(recordRejected);
  };
  let status: FinalStatus = 'failed';
  let scheduledAt = new Date().toISOString();
  try {
    for (let attempt = 1; ; attempt++) {
      const outcome = await sendAttempt(input, attempt);
      const attemptRecord: AttemptRecord = { ...outcome, scheduledAt };
      delivery.attempts.push(attemptRecord);
      // Not awaited here: a slow database must not delay the retry timer.
      record(() => recordAttempt({ webhook: attempt === 1 ? firstRecordOf : webhook, attempt: attemptRecord }));
      if (outcome.succeeded || attempt === MAX_ATTEMPTS) {
        status = outcome.succeeded ? 'delivered' : 'failed';
        delivery.enter(status);
        break;
      }
      scheduledAt = (await delivery.waitForRetry(attempt)).scheduledAt;
    }
  } catch (error) {
    if (!isCancellation(error)) throw error;
    // Cancelled by an operator: say so in PostgreSQL and in the search attribute, then end as cancelled.
    delivery.cancelled();
    await finish('cancelled');
    throw error;
  }

  await finish(status);
  return { webhookId: input.webhookId, eventId: input.eventId, status, attempts: delivery.attempts };
}

/**
 * Record activities retry until PostgreSQL is back; they only fail when it rejects the row itself. The
 * delivery has happened either way, so the workflow logs that and finishes rather than hang.
 */
export function recordRejected(error: unknown): void {
  log.error('a webhook record was rejected by PostgreSQL and is lost', { error: error instanceof Error ? error.message : String(error) });
}

/**
 * One POST. The activity classifies every HTTP and network outcome itself; an activity failure here means
 * the worker died or stalled mid-attempt, which costs this attempt and the schedule goes on.
 */
async function sendAttempt(input: DeliverWebhookInput, attempt: number): Promise<AttemptOutcome> {
  const startedAt = Date.now();
  const timeoutMs = input.sendTimeoutMs ?? DEFAULT_SEND_TIMEOUT_MS;
  try {
    return await sendWebhook.executeWithOptions(
      { summary: `attempt ${attempt} of ${MAX_ATTEMPTS}`, startToCloseTimeout: timeoutMs + SEND_TIMEOUT_MARGIN_MS },
      [{ webhookId: input.webhookId, attempt, event: input.event, timeoutMs }],
    );
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    return {
      attempt,
      startedAt: new Date(startedAt).toISOString(),
      durationMs: Math.max(0, Date.now() - startedAt),
      httpStatus: null,
      errorClass: error.cause instanceof TimeoutFailure ? 'timeout' : 'other',
      errorMessage: `attempt did not complete on the worker: ${error.cause?.message ?? error.message}`,
      responseBody: null,
      succeeded: false,
    };
  }
}
