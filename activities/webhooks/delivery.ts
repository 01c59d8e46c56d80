import { setTimeout as delay } from 'node:timers/promises';
import type { Knex } from 'knex';
import { ApplicationFailure } from '@temporalio/common';
import { Context } from '@temporalio/activity';
import type { WorkflowService } from '@temporalio/client';
import { dataAtRest } from '../../lib/at-rest';
import { partnerSettings, type Config } from '../../lib/config';
import type { Logger } from '../../lib/logger';
import { orderingGaps, orderingWakes, webhooksFinished } from '../../lib/metrics';
import { claimAttempt, type AttemptClaim } from '../../store/webhooks/attempt-claim';
import { storeAttempt, storeOutcome } from '../../store/webhooks/attempt-record';
import type { GateClaim, GateFeedback } from '../../store/partner/partner-gate';
import {
  ERASED_FAILURE_TYPE,
  failedAttempt,
  MAX_ATTEMPTS,
  type AttemptOutcome,
  type DeliverAttemptInput,
  type DeliveredAttempt,
  type FinalStatus,
  type HeldAttempt,
  type QueuedAttempt,
  type RecordAttemptInput,
  type RecordOutcomeInput,
  type StoppedStatus,
} from '../../lib/delivery';
import { partnerVerdict } from '../../lib/partner-states';
import { expiredSignedLinks } from '../../events/signed-links';
import { describeError } from '../../lib/describe-error';
import { createPostToPartner } from '../../partner-client/partner-post';
import { deleteRun } from '../../temporal/run-deletion';
import { wakeInOrder } from '../../temporal/ordering-wake';
import { blockPlace, settlePlace, takeTurn, unblockPlace } from '../../store/ordering/lanes';

/** What one attempt ended: its delivery's final status, if any, and whether its key is now blocked. */
interface AttemptEnd {
  readonly status?: FinalStatus;
  readonly blocks: boolean;
}

export interface ActivityDependencies {
  /** Read on every send, so a rotated token or endpoint applies to pending retries. */
  readonly config: () => Config;
  readonly knex: Knex;
  readonly logger: Logger;
  /**
   * Aborted when the worker process begins its graceful shutdown. Attempts still queued for a local
   * activity slot then give their webhook back unclaimed instead of POSTing during the drain.
   */
  readonly draining?: AbortSignal;
  /** The clock that dates each POST against the event's signed-link deadlines; tests pass their own. */
  readonly now?: () => Date;
  /** The worker's connection to Temporal: a run that finds its webhook erased deletes itself through it. */
  readonly workflowService?: WorkflowService;
}

/** The webhook activities, bound to their dependencies. Their names are part of every workflow history. */
export function createActivities({ config, knex, logger, draining, workflowService, now = () => new Date() }: ActivityDependencies) {
  const postToPartner = createPostToPartner({ config, logger });

  /**
   * Claims the attempt within the deployment's cap: a send slot a little ahead is waited for here, then
   * claimed; with no slot within the horizon, the claim is asked again when one frees. Past
   * THROTTLED_CLAIM_BUDGET_MS the try gives up unclaimed and Temporal retries it.
   */
  async function claimWithinCap(input: DeliverAttemptInput): Promise<AttemptClaim> {
    const { TEMPORAL_TASK_QUEUE: taskQueue, PARTNER_MAX_PER_SECOND: maxPerSecond } = config();
    const giveUpAt = performance.now() + THROTTLED_CLAIM_BUDGET_MS;
    let slotReserved = false;
    for (;;) {
      if (draining?.aborted) throw drainingFailure();
      const gate: GateClaim = { taskQueue, maxPerSecond, bypassHold: input.pastHoldCeiling === true, slotReserved };
      const claim = await failPermanentlyOnRejectedData(() => claimAttempt(knex, dataAtRest(config()), { ...input.webhook, event: input.event, redeliveryOf: input.webhookIdHeader }, input.attempt, gate));
      if (claim.kind !== 'slot' && claim.kind !== 'throttled') return claim;
      const waitMs = Math.max(MIN_CLAIM_WAIT_MS, claim.kind === 'slot' ? claim.sendInMs : claim.retryInMs);
      if (performance.now() + waitMs > giveUpAt) throw throttledFailure();
      await delay(waitMs);
      slotReserved = claim.kind === 'slot';
    }
  }

  /** The breaker's input from a POST that was made, and the log line of each gate change it caused. */
  function gateFeedback(outcome: AttemptOutcome): GateFeedback {
    const current = config();
    return {
      taskQueue: current.TEMPORAL_TASK_QUEUE,
      verdict: partnerVerdict(outcome.httpStatus),
      retryAfterSeconds: outcome.retryAfterMs === undefined ? null : outcome.retryAfterMs / 1000,
      breakerFailures: current.PARTNER_BREAKER_FAILURES,
      probeIntervalMs: current.PARTNER_PROBE_INTERVAL_MS,
    };
  }

  /**
   * The POST of a claimed attempt, marked with the kinds of signed link already past their deadline. The
   * schedule does not change for them: the partner may still use the rest of the event.
   */
  async function postClaimed(input: DeliverAttemptInput, acceptedAt: Date): Promise<AttemptOutcome> {
    const expiredLinks = expiredSignedLinks(input.event, acceptedAt, now());
    if (expiredLinks.length) {
      logger.warn(
        { webhookId: input.webhookId, attempt: input.attempt, expiredLinks, acceptedAt: acceptedAt.toISOString() },
        'sending signed links that are past their deadline: the partner cannot fetch them',
      );
    }
    const outcome = await postToPartner(input);
    return expiredLinks.length ? { ...outcome, expiredLinks } : outcome;
  }

  /**
   * Settles an ordered webhook's place in its lane (a final failure or a cancel leaves a gap) and wakes the next
   * webhook of its key. A wake that cannot be sent is logged: the ordering sweep finds that webhook waiting and wakes it.
   */
  async function settleInOrder(webhookId: string, status: StoppedStatus): Promise<void> {
    // Anything but a delivery leaves its number missing at the partner: a gap.
    const gap = status !== 'delivered';
    const { gapRecorded, next } = await settlePlace(knex, webhookId, gap);
    if (gapRecorded) orderingGaps.inc();
    if (!next || !workflowService) return;
    await wakeInOrder(workflowService, config().temporal.namespace, next.workflowId, 'partner-service-worker').then(
      (woken) => woken && orderingWakes.inc({ source: 'settle' }),
      (error: unknown) => {
        logger.warn({ err: error, webhookId, next: next.webhookId }, 'the next webhook of the ordering key could not be woken; the ordering sweep wakes it');
      },
    );
  }

  /**
   * What an attempt's outcome ends: the delivery (delivered, or failed on its last attempt) or nothing yet. An
   * ordered head's final failure with WEBHOOK_ORDERING_ON_FAILURE=block ends nothing either: its key waits.
   */
  function endOf(input: DeliverAttemptInput, ordering: DeliverAttemptInput['ordering'], outcome: AttemptOutcome): AttemptEnd {
    const blocks = !outcome.succeeded && input.finalOnFailure && ordering !== undefined && !input.webhookIdHeader && config().WEBHOOK_ORDERING_ON_FAILURE === 'block';
    const status: FinalStatus | undefined = outcome.succeeded ? 'delivered' : input.finalOnFailure && !blocks ? 'failed' : undefined;
    return { status, blocks };
  }

  /** Settles an ordered webhook's place once its delivery ended, or blocks its key. A redelivery has no place of its own. */
  async function settleOrBlock(input: DeliverAttemptInput, ordering: DeliverAttemptInput['ordering'], end: AttemptEnd): Promise<void> {
    if (end.blocks) await blockPlace(knex, input.webhookId);
    else if (end.status && ordering && !input.webhookIdHeader) await settleInOrder(input.webhookId, end.status);
  }

  return {
    /**
     * One attempt, as a local activity: claim it in PostgreSQL, POST, record the outcome (with the final status
     * when it ends the delivery). Anything that fails before the claim is retried, nothing POSTed yet; a try
     * that finds the attempt claimed by an earlier one never POSTs. After the POST nothing throws: a record that
     * cannot be written in time comes back as `needsRecord`, and the workflow writes it through the retried
     * record activities.
     */
    async deliverAttempt(input: DeliverAttemptInput): Promise<DeliveredAttempt | HeldAttempt | QueuedAttempt> {
      // An ordered webhook's first attempt asks its lane first: queued while an earlier webhook of its key is
      // unsettled, so only a lane's head takes a send slot or is held by the partner gate.
      let ordering = input.ordering;
      if (input.orderingKey !== undefined && ordering === undefined) {
        const turn = await failPermanentlyOnRejectedData(() =>
          takeTurn(knex, dataAtRest(config()), { ...input.webhook, event: input.event, redeliveryOf: input.webhookIdHeader }, input.orderingKey!),
        );
        if (turn.kind === 'queued') return { queued: { sequence: turn.sequence, behind: turn.behind } };
        if (turn.kind === 'turn') ordering = { key: turn.key, sequence: turn.sequence };
      }
      // An operator's retry of a blocked head: not blocked while it goes, blocked again if it fails.
      if (ordering && input.attempt > MAX_ATTEMPTS) await unblockPlace(knex, input.webhookId);
      const claim = await claimWithinCap(input);
      if (claim.kind === 'held') {
        return { held: { state: claim.state, pauseReason: claim.pauseReason, ceilingMs: config().PARTNER_HOLD_CEILING_MS } };
      }
      if (claim.kind === 'recorded') {
        // The try that recorded it may have been lost before it settled or blocked its place (a worker killed,
        // PostgreSQL gone): both are idempotent, so this try does them again, or the key would wait forever. Its
        // sequence goes back too, or the next attempt would be sent unordered and never settle.
        const end = endOf(input, ordering, claim.outcome);
        await settleOrBlock(input, ordering, end);
        return { outcome: claim.outcome, needsRecord: false, ...placeInResult(input, ordering), ...(end.blocks && { blocked: true }) };
      }
      if (claim.kind === 'erased') {
        // A run that appeared after an erasure (a start in flight, one resolved in doubt, one started elsewhere)
        // carries the erased event in its history: it deletes itself, and the attempt is not sent.
        const run = Context.current().info.workflowExecution;
        if (workflowService && run) await deleteRun(workflowService, config().temporal.namespace, run.workflowId, run.runId);
        throw erasedFailure();
      }
      // Only a POST that was made tells the breaker anything: not a lost try, nor a missing endpoint.
      const sent = claim.kind === 'claimed' && !('missing' in partnerSettings(config()));
      const outcome = claim.kind === 'claimed' ? await postClaimed({ ...input, ordering }, claim.acceptedAt) : lostAttempt(input.attempt);
      const end = endOf(input, ordering, outcome);
      const finish = end.status && { status: end.status, finishedAt: new Date().toISOString() };
      const record = { webhook: input.webhook, attempt: { ...outcome, scheduledAt: input.scheduledAt, trigger: input.trigger } };
      const write = storeAttempt(knex, dataAtRest(config()), record, finish, sent ? gateFeedback(outcome) : undefined);
      const written = await withinMs(write, RECORD_TIMEOUT_MS).then(
        (change) => {
          if (change.tripped) {
            logger.warn(
              { webhookId: input.webhookId, breakerFailures: config().PARTNER_BREAKER_FAILURES, probeIntervalMs: config().PARTNER_PROBE_INTERVAL_MS },
              'partner breaker tripped: the partner keeps failing, so every delivery is held and one probe at a time checks it',
            );
          }
          if (change.throttledUntil) {
            logger.warn({ webhookId: input.webhookId, httpStatus: outcome.httpStatus, until: change.throttledUntil.toISOString() }, 'partner sent Retry-After: every delivery is held until then');
          }
          return true;
        },
        (error: unknown) => {
          logger.warn({ err: error, webhookId: input.webhookId, attempt: input.attempt }, 'recording the attempt failed; the workflow records it');
          return false;
        },
      );
      if (written && finish) {
        webhooksFinished.inc({ status: finish.status });
        logger.info({ webhookId: input.webhookId, status: finish.status }, 'webhook finished');
      }
      // An end not written yet is settled by the workflow's recordOutcome, once it is.
      await settleOrBlock(input, ordering, written ? end : { blocks: end.blocks });
      return { outcome, needsRecord: !written, ...placeInResult(input, ordering), ...(end.blocks && { blocked: true }) };
    },

    /** Retried by Temporal until PostgreSQL accepts it, unless PostgreSQL rejects the data itself. */
    async recordAttempt(input: RecordAttemptInput): Promise<void> {
      await failPermanentlyOnRejectedData(() => storeAttempt(knex, dataAtRest(config()), input));
    },

    /** The final status, delivered or failed; retried the same way. */
    async recordOutcome(input: RecordOutcomeInput): Promise<void> {
      await failPermanentlyOnRejectedData(() => storeOutcome(knex, input));
      webhooksFinished.inc({ status: input.status });
      logger.info({ webhookId: input.webhook.webhookId, status: input.status }, 'webhook finished');
      if (input.ordered) await settleInOrder(input.webhook.webhookId, input.status);
    },
  };
}

export type WebhookActivities = ReturnType<typeof createActivities>;

/**
 * What an attempt that had its turn tells the workflow of its place: the sequence, and the lane's key when the
 * workflow's input brought another (a retried event_id), so its later attempts send the first acceptance's key.
 */
function placeInResult(input: DeliverAttemptInput, ordering: DeliverAttemptInput['ordering']): Pick<DeliveredAttempt, 'sequence' | 'laneKey'> {
  if (!ordering) return {};
  const laneKey = input.orderingKey !== undefined && ordering.key !== input.orderingKey ? ordering.key : undefined;
  return { sequence: ordering.sequence, ...(laneKey !== undefined && { laneKey }) };
}

/** An attempt claimed by an earlier try that was lost after it may have POSTed: failed, and never POSTed twice. */
const lostAttempt = (attempt: number): AttemptOutcome =>
  failedAttempt(attempt, {
    errorClass: 'timeout',
    errorMessage: 'attempt did not complete on the worker; it may have reached the partner, so it is not sent again',
  });

/**
 * Retry delay of an attempt a draining worker gave back. Longer than the local activities' retry threshold
 * (1 minute by default), so the workflow waits on a durable timer rather than retrying in this worker, and the
 * workflow task completes before the worker exits; any worker then claims and POSTs the attempt.
 */
export const DRAIN_RETRY_DELAY_MS = 65_000;

/** Nothing was claimed or POSTed: the attempt is retried after DRAIN_RETRY_DELAY_MS, by whichever worker polls. */
function drainingFailure(): ApplicationFailure {
  return ApplicationFailure.create({
    type: 'WorkerDraining',
    message: 'the worker is shutting down: the attempt was not started and is retried later',
    nextRetryDelay: DRAIN_RETRY_DELAY_MS,
  });
}

/**
 * An erasure cancelled the delivery and removed its payload while its run still lived: nothing is sent, and the
 * workflow's path for an unclaimed attempt loses it unrecorded until the erasure deletes the run.
 */
function erasedFailure(): ApplicationFailure {
  return ApplicationFailure.nonRetryable('the webhook was erased on request: the attempt is not sent', ERASED_FAILURE_TYPE);
}

/** How long one try waits for a send slot before it gives up unclaimed and Temporal retries it. */
const THROTTLED_CLAIM_BUDGET_MS = 10_000;

/** The shortest wait before asking for a slot again, so throttled tries do not spin on the gate row. */
const MIN_CLAIM_WAIT_MS = 5;

/** Over the cap for longer than a try may wait: nothing was claimed or sent, and Temporal retries the try. */
function throttledFailure(): ApplicationFailure {
  return ApplicationFailure.create({
    type: 'PartnerRateCap',
    message: 'no send slot within the partner cap yet: the attempt was not started and is retried',
    nextRetryDelay: 1000,
  });
}

/** How long a local activity waits for its record before handing it to the retried record activities. */
const RECORD_TIMEOUT_MS = 5000;

/** Rejects when `work` takes longer than `ms`; the work itself goes on (its writes are idempotent). */
function withinMs<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer from PostgreSQL within ${ms} ms`)), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/** SQLSTATE classes that no retry can fix: data exceptions, integrity violations, program limits. */
const REJECTED_DATA = /^(22|23|54)/;

/**
 * An outage is retried (Temporal's retry policy); a row PostgreSQL rejects for what it contains would be
 * rejected forever, so it fails the activity once, non-retryably, and the workflow goes on without it.
 */
async function failPermanentlyOnRejectedData<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string' && REJECTED_DATA.test(code)) {
      // The message goes into the workflow's history and its log line: describeError leaves the refused value out.
      throw ApplicationFailure.nonRetryable(`PostgreSQL rejected the record (SQLSTATE ${code}): ${describeError(error)}`, 'RecordRejected');
    }
    throw error;
  }
}
