import {
  ActivityFailure,
  CancellationScope,
  isCancellation,
  log,
  proxyActivities,
  setHandler,
  sleep,
  TimeoutFailure,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import type { WebhookActivities } from '../activities';
import { companyIdOf } from '../events/company-id';
import { webhookStatusQuery } from './queries';
import { COMPANY_ID, WEBHOOK_ACTION, WEBHOOK_EVENT_TYPE, WEBHOOK_STATUS } from '../temporal/search-attributes';
import {
  DEFAULT_SEND_TIMEOUT_MS,
  MAX_ATTEMPTS,
  RETRY_DELAYS_MS,
  SEND_TRIES,
  recordsTaskQueue,
  type AttemptOutcome,
  type AttemptRecord,
  type DeliverWebhookInput,
  type DeliveryState,
  type DeliverySummary,
  type FinalStatus,
  type WebhookRef,
} from './types';

/** Room beyond the HTTP timeout for connecting, reading 4 KiB of body and reporting back. */
const SEND_TIMEOUT_MARGIN_MS = 15_000;

/**
 * The schedule of deliverWebhook is the whole retry policy of a POST. Temporal retries the activity once only
 * for a try it lost (a task that never reached a worker, a worker that died); the activity itself refuses to
 * POST again when the lost try had got as far as the POST (see activities/index.ts).
 */
const { sendWebhook } = proxyActivities<WebhookActivities>({
  startToCloseTimeout: DEFAULT_SEND_TIMEOUT_MS + SEND_TIMEOUT_MARGIN_MS,
  retry: { maximumAttempts: SEND_TRIES, initialInterval: '1 second' },
});

const retrySummary = (retry: number, delayMs: number): string =>
  `retry ${retry} of ${MAX_ATTEMPTS - 1} in ${delayMs / 1000} s`;

/**
 * Delivers one webhook: at most 4 POSTs, with durable timers of 10 s, 100 s and 1000 s between them, and
 * stops at the first 2XX. Each outcome and the final status are written by a separate, retried activity.
 */
export async function deliverWebhook(input: DeliverWebhookInput): Promise<DeliverySummary> {
  const { workflowId, runId, taskQueue } = workflowInfo();
  /** Recording is retried until PostgreSQL answers, so an outage delays a record but never loses it. */
  const { recordAttempt, recordOutcome } = proxyActivities<WebhookActivities>({
    taskQueue: recordsTaskQueue(taskQueue),
    startToCloseTimeout: '30 seconds',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
  });
  // Records carry ids and outcomes; the event, already in the workflow input, is repeated only where no row exists.
  const webhook: WebhookRef = { webhookId: input.webhookId, eventId: input.eventId, workflowId, runId, isTest: false };
  const firstRecordOf: WebhookRef = input.eventStored ? webhook : { ...webhook, event: input.event };
  const attempts: AttemptRecord[] = [];
  let state: DeliveryState = 'sending';
  let nextAttemptAt: string | null = null;
  setHandler(webhookStatusQuery, () => ({ webhookId: input.webhookId, eventId: input.eventId, state, attempts, nextAttemptAt }));
  const enter = (next: DeliveryState) => {
    state = next;
    upsertSearchAttributes([{ key: WEBHOOK_STATUS, value: next }]);
  };

  const companyId = companyIdOf(input.event);
  const identity: SearchAttributeUpdatePair[] = [
    { key: WEBHOOK_EVENT_TYPE, value: input.event.event_type },
    { key: WEBHOOK_ACTION, value: input.event.action },
    { key: WEBHOOK_STATUS, value: state },
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
      attempts.push(attemptRecord);
      // Not awaited here: a slow database must not delay the retry timer.
      record(() => recordAttempt({ webhook: attempt === 1 ? firstRecordOf : webhook, attempt: attemptRecord }));
      if (outcome.succeeded || attempt === MAX_ATTEMPTS) {
        status = outcome.succeeded ? 'delivered' : 'failed';
        enter(status);
        break;
      }
      const delayMs = RETRY_DELAYS_MS[attempt - 1];
      nextAttemptAt = new Date(Date.now() + delayMs).toISOString();
      enter('waiting');
      await sleep(delayMs, { summary: retrySummary(attempt, delayMs) });
      scheduledAt = nextAttemptAt;
      nextAttemptAt = null;
      enter('sending');
    }
  } catch (error) {
    if (!isCancellation(error)) throw error;
    // Cancelled by an operator: say so in PostgreSQL and in the search attribute, then end as cancelled.
    nextAttemptAt = null;
    enter('cancelled');
    await finish('cancelled');
    throw error;
  }

  await finish(status);
  return { webhookId: input.webhookId, eventId: input.eventId, status, attempts };
}

/**
 * Record activities retry until PostgreSQL is back; they only fail when it rejects the row itself. The
 * delivery has happened either way, so the workflow logs that and finishes rather than hang.
 */
function recordRejected(error: unknown): void {
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
