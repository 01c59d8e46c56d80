import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  isCancellation,
  log,
  patched,
  proxyLocalActivities,
  workflowInfo,
} from '@temporalio/workflow';
import type { WebhookActivities } from '../../activities/webhooks/delivery';
import { LANE_KEY_PATCH, recordActivities, trackDelivery, type NextAttempt } from './delivery-state';
import {
  DEFAULT_SEND_TIMEOUT_MS,
  ERASED_FAILURE_TYPE,
  failedAttempt,
  MAX_ATTEMPTS,
  type AttemptRecord,
  type DeliveredAttempt,
  type FinalStatus,
  type HeldAttempt,
  type QueuedAttempt,
  type WebhookRef,
} from '../../lib/delivery';
import type { DeliverWebhookInput, DeliverySummary } from '../types';

/** Room beyond the HTTP timeout for claiming, connecting, reading 4 KiB of body and recording the outcome. */
const SEND_TIMEOUT_MARGIN_MS = 15_000;

/**
 * Each attempt is one local activity that claims, POSTs and records it, so a first-try delivery is one
 * workflow task: start, the attempt, the status upsert, done. Retried only before the claim (PostgreSQL down),
 * which never POSTs; a lost try is never POSTed again (see activities/webhooks/delivery.ts).
 */
const { deliverAttempt } = proxyLocalActivities<WebhookActivities>({
  startToCloseTimeout: DEFAULT_SEND_TIMEOUT_MS + SEND_TIMEOUT_MARGIN_MS,
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/**
 * Delivers one webhook: at most 4 POSTs, with durable timers of 10 s, 100 s and 1000 s between them, and
 * stops at the first 2XX. The start sets the search attributes; the workflow updates `WebhookStatus` as it goes.
 */
export async function deliverWebhook(input: DeliverWebhookInput): Promise<DeliverySummary> {
  const { workflowId, runId, taskQueue } = workflowInfo();
  /** Only for a record the attempt could not write itself, and for a cancel. */
  const { recordAttempt, recordOutcome } = recordActivities(taskQueue);
  const webhook: WebhookRef = {
    webhookId: input.webhookId,
    eventId: input.eventId,
    workflowId,
    runId,
    isTest: input.isTest === true,
  };
  const delivery = trackDelivery(input);
  const pendingRecords: Promise<void>[] = [];
  // Records run outside cancellation: an operator's cancel must not lose an outcome already known.
  const record = (write: () => Promise<void>) =>
    pendingRecords.push(CancellationScope.nonCancellable(write).catch(recordRejected));
  const timeoutMs = input.sendTimeoutMs ?? DEFAULT_SEND_TIMEOUT_MS;

  let status: FinalStatus = 'failed';
  /**
   * An ordered webhook's key and sequence number, once its first attempt had its turn (a redelivery's from the start).
   */
  let ordering: { key: string; sequence: number } | undefined = input.ordering;
  let next: NextAttempt = { scheduledAt: new Date().toISOString(), trigger: 'schedule' };
  try {
    for (let attempt = 1; ; attempt++) {
      // An operator's retry of a blocked head is an attempt past the fourth, and the last again.
      const last = attempt >= MAX_ATTEMPTS;
      const startedAtMs = Date.now();
      const summary = `attempt ${attempt} of ${MAX_ATTEMPTS}${next.trigger === 'manual' ? ' (retry-now)' : ''}`;
      let result: DeliveredAttempt | HeldAttempt | QueuedAttempt;
      // A held attempt is not an attempt: it keeps its number and is claimed again when the hold ends. Nor is a
      // queued one: an ordered webhook's first attempt waits, with no timer, until the webhook ahead settles.
      for (;;) {
        result = await deliverAttempt
          .executeWithOptions({ summary, startToCloseTimeout: timeoutMs + SEND_TIMEOUT_MARGIN_MS }, [
            {
              webhookId: input.webhookId,
              attempt,
              event: input.event,
              timeoutMs,
              scheduledAt: next.scheduledAt,
              trigger: next.trigger,
              finalOnFailure: last,
              webhookIdHeader: input.redeliveryOf,
              webhook,
              ...(delivery.pastHoldCeiling() && { pastHoldCeiling: true }),
              ...(ordering
                ? { ordering }
                : input.orderingKey !== undefined && attempt === 1 && { orderingKey: input.orderingKey }),
              ...(input.inLane && { inLane: true }),
            },
          ])
          .catch((error: unknown) => unclaimedAttempt(error, attempt, startedAtMs));
        if ('queued' in result) {
          await delivery.waitForTurn(result.queued);
          continue;
        }
        if (!('held' in result)) break;
        await delivery.waitWhileHeld(result.held);
      }
      const { outcome, needsRecord } = result;
      if (result.sequence !== undefined && input.orderingKey !== undefined) {
        // A retried event_id may have brought another key than its first acceptance's: the lane's is sent, by
        // every later attempt too.
        const laneKey = result.laneKey !== undefined && patched(LANE_KEY_PATCH) ? result.laneKey : undefined;
        ordering = { key: laneKey ?? ordering?.key ?? input.orderingKey, sequence: result.sequence };
      }
      const attemptRecord: AttemptRecord = { ...outcome, ...next };
      delivery.attempts.push(attemptRecord);
      // A blocked head's failure ends nothing: its key waits for an operator's skip or retry.
      const done = (outcome.succeeded || last) && !result.blocked;
      if (done) status = outcome.succeeded ? 'delivered' : 'failed';
      if (needsRecord) {
        record(() => recordAttempt({ webhook, attempt: attemptRecord }));
        if (done)
          record(() =>
            recordOutcome({
              webhook,
              status,
              finishedAt: new Date().toISOString(),
              ...(((ordering && !input.redeliveryOf) || input.inLane) && { ordered: true }),
            }),
          );
      }
      if (done) {
        delivery.enter(status);
        break;
      }
      if (result.blocked) {
        if ((await delivery.waitWhileBlocked()) === 'retry') {
          next = { scheduledAt: new Date().toISOString(), trigger: 'manual' };
          continue;
        }
        status = 'failed';
        record(() => recordOutcome({ webhook, status, finishedAt: new Date().toISOString(), ordered: true }));
        delivery.enter(status);
        break;
      }
      next = await delivery.waitForRetry(attempt, outcome.retryAfterMs);
    }
  } catch (error) {
    if (!isCancellation(error)) throw error;
    // Cancelled by an operator: say so in PostgreSQL and in the search attribute, then end as cancelled.
    delivery.cancelled();
    // A queued or attempting ordered webhook settles its place too, so the next webhook of its key goes.
    const ordered =
      ((ordering !== undefined || input.orderingKey !== undefined) && input.redeliveryOf === undefined) ||
      input.inLane === true;
    record(() =>
      recordOutcome({
        webhook,
        status: 'cancelled',
        finishedAt: new Date().toISOString(),
        ...(ordered && { ordered: true }),
      }),
    );
    await Promise.all(pendingRecords);
    throw error;
  }
  await Promise.all(pendingRecords);
  return { webhookId: input.webhookId, eventId: input.eventId, status, attempts: delivery.attempts };
}

/**
 * The attempt's local activity retries everything before its POST and never throws after it, so its failure
 * is a claim PostgreSQL rejected for good: the attempt is lost unsent, and the schedule goes on. Nothing more
 * is recorded: PostgreSQL would reject the record activities' rows as well. A local activity's non-retryable
 * failure arrives as the ApplicationFailure it threw, not wrapped in an ActivityFailure.
 */
function unclaimedAttempt(error: unknown, attempt: number, startedAtMs: number): DeliveredAttempt {
  if (!(error instanceof ApplicationFailure || error instanceof ActivityFailure)) throw error;
  // An erasure removed the webhook's body and cancelled it; its run is being deleted.
  if (error instanceof ApplicationFailure && error.type === ERASED_FAILURE_TYPE)
    log.info('the webhook was erased on request: its attempt is not sent');
  else recordRejected(error);
  const outcome = failedAttempt(attempt, {
    errorClass: 'other',
    errorMessage: `attempt could not be claimed: ${error.cause?.message ?? error.message}`,
    startedAt: new Date(startedAtMs).toISOString(),
    durationMs: Math.max(0, Date.now() - startedAtMs),
  });
  return { outcome, needsRecord: false };
}

/**
 * Record activities retry until PostgreSQL is back; they only fail when it rejects the row itself. The
 * delivery has happened either way, so the workflow logs that and finishes rather than hang.
 */
function recordRejected(error: unknown): void {
  log.error('a webhook record was rejected by PostgreSQL and is lost', {
    error: error instanceof Error ? error.message : String(error),
  });
}
