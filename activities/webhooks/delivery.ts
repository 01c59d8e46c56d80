import type { Knex } from 'knex';
import { ApplicationFailure } from '@temporalio/common';
import { Context } from '@temporalio/activity';
import type { WorkflowService } from '@temporalio/client';
import { dataAtRest } from '../../lib/at-rest';
import { partnerSettings, type Config } from '../../lib/config';
import type { Logger } from '../../lib/logger';
import { webhooksFinished } from '../../lib/metrics';
import type { AttemptClaim } from '../../store/webhooks/attempt-claim';
import { storeAttempt, storeOutcome } from '../../store/webhooks/attempt-record';
import {
  ERASED_FAILURE_TYPE,
  failedAttempt,
  type AttemptOutcome,
  type DeliverAttemptInput,
  type DeliveredAttempt,
  type HeldAttempt,
  type QueuedAttempt,
  type RecordAttemptInput,
  type RecordOutcomeInput,
} from '../../lib/delivery';
import { expiredSignedLinks } from '../../events/signed-links';
import { createPostToPartner } from '../../partner-client/partner-post';
import { deleteRun } from '../../temporal/run-deletion';
import { failPermanentlyOnRejectedData } from './attempt-failures';
import { createOrderingSteps, placeInResult, type AttemptEnd, type Place } from '../ordering/ordering-steps';
import { createGateSteps } from '../partner/gate-steps';
import { createSigningKeys } from '../partner/signing-keys';

export { DRAIN_RETRY_DELAY_MS } from './attempt-failures';

// One attempt of a delivery, as the `deliverAttempt` local activity, in five stages, each with its result:
// turn (ordering, activities/ordering/ordering-steps.ts) → claim (the partner gate, activities/partner/gate-steps.ts)
// → send (the POST) → record (the outcome, with the final status when it ends the delivery) → settle (the
// ordered webhook's place). The statements the claim and the record send are printed whole in docs/sql/.

/** What the send stage did: the attempt's outcome, and whether a POST was made (only that tells the breaker). */
interface Sent {
  readonly outcome: AttemptOutcome;
  readonly posted: boolean;
}

/** What the record stage left: the outcome, what it ends, and whether its record was written here. */
interface Recorded {
  readonly outcome: AttemptOutcome;
  readonly end: AttemptEnd;
  readonly written: boolean;
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
export function createActivities({
  config,
  knex,
  logger,
  draining,
  workflowService,
  now = () => new Date(),
}: ActivityDependencies) {
  const postToPartner = createPostToPartner({
    config,
    logger,
    signingKeys: createSigningKeys({ config, knex, logger }),
  });
  const ordering = createOrderingSteps({ config, knex, logger, workflowService });
  const gate = createGateSteps({ config, knex, logger, draining });

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

  /** The send stage: the POST of a claimed attempt, or the outcome of one an earlier try claimed and lost. */
  async function send(input: DeliverAttemptInput, place: Place, claim: AttemptClaim): Promise<Sent> {
    // Only a POST that was made tells the breaker anything: not a lost try, nor a missing endpoint.
    const posted = claim.kind === 'claimed' && !('missing' in partnerSettings(config()));
    const outcome =
      claim.kind === 'claimed'
        ? await postClaimed({ ...input, ordering: place }, claim.acceptedAt)
        : lostAttempt(input.attempt);
    return { outcome, posted };
  }

  /**
   * The record stage: the outcome, with the final status when it ends the delivery and, after a POST, the
   * breaker's input, in one statement within RECORD_TIMEOUT_MS. After the POST nothing throws: a record not
   * written in time is left to the workflow (`needsRecord`).
   */
  async function record(input: DeliverAttemptInput, place: Place, { outcome, posted }: Sent): Promise<Recorded> {
    const end = ordering.endOf(input, place, outcome);
    const finish = end.status && { status: end.status, finishedAt: new Date().toISOString() };
    const attempt = {
      webhook: input.webhook,
      attempt: { ...outcome, scheduledAt: input.scheduledAt, trigger: input.trigger },
    };
    const write = storeAttempt(
      knex,
      dataAtRest(config()),
      attempt,
      finish,
      posted ? gate.gateFeedback(outcome) : undefined,
    );
    const written = await withinMs(write, RECORD_TIMEOUT_MS).then(
      (change) => {
        gate.logGateChange(input, outcome, change);
        return true;
      },
      (error: unknown) => {
        logger.warn(
          { err: error, webhookId: input.webhookId, attempt: input.attempt },
          'recording the attempt failed; the workflow records it',
        );
        return false;
      },
    );
    if (written && finish) {
      webhooksFinished.inc({ status: finish.status });
      logger.info({ webhookId: input.webhookId, status: finish.status }, 'webhook finished');
    }
    return { outcome, end, written };
  }

  /** The settle stage: the ordered webhook's place settled or its key blocked, and the attempt's result. */
  async function settle(
    input: DeliverAttemptInput,
    place: Place,
    { outcome, end, written }: Recorded,
  ): Promise<DeliveredAttempt> {
    // An end not written yet is settled by the workflow's recordOutcome, once it is.
    await ordering.settleOrBlock(input, place, written ? end : { blocks: end.blocks });
    return { outcome, needsRecord: !written, ...placeInResult(input, place), ...(end.blocks && { blocked: true }) };
  }

  /**
   * A run that appeared after an erasure (a start in flight, one resolved in doubt, one started elsewhere)
   * carries the erased event in its history: it deletes itself, and the attempt is not sent.
   */
  async function deleteErasedRun(): Promise<never> {
    const run = Context.current().info.workflowExecution;
    if (workflowService && run)
      await deleteRun(workflowService, config().temporal.namespace, run.workflowId, run.runId);
    throw erasedFailure();
  }

  return {
    /**
     * One attempt, as a local activity, in its stages: its turn in an ordered lane, the claim in PostgreSQL
     * through the partner gate, the POST, the record of its outcome (with the final status when it ends the
     * delivery) and the settling of its place. Anything that fails before the claim is retried, nothing POSTed
     * yet; a try that finds the attempt claimed by an earlier one never POSTs. After the POST nothing throws: a
     * record that cannot be written in time comes back as `needsRecord`, and the workflow writes it through the
     * retried record activities.
     */
    async deliverAttempt(input: DeliverAttemptInput): Promise<DeliveredAttempt | HeldAttempt | QueuedAttempt> {
      const turn = await ordering.turn(input);
      if ('queued' in turn) return turn;
      const claim = await gate.claimWithinCap(input);
      if (claim.kind === 'held') {
        return {
          held: { state: claim.state, pauseReason: claim.pauseReason, ceilingMs: config().PARTNER_HOLD_CEILING_MS },
        };
      }
      if (claim.kind === 'erased') return deleteErasedRun();
      if (claim.kind === 'recorded') {
        // The try that recorded it may have been lost before it settled or blocked its place (a worker killed,
        // PostgreSQL gone): both are idempotent, so this try does them again, or the key would wait forever. Its
        // sequence goes back too, or the next attempt would be sent unordered and never settle.
        return settle(input, turn.place, {
          outcome: claim.outcome,
          end: ordering.endOf(input, turn.place, claim.outcome),
          written: true,
        });
      }
      const sent = await send(input, turn.place, claim);
      return settle(input, turn.place, await record(input, turn.place, sent));
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
      if (input.ordered) await ordering.settleInOrder(input.webhook.webhookId, input.status);
    },
  };
}

export type WebhookActivities = ReturnType<typeof createActivities>;

/** An attempt claimed by an earlier try that was lost after it may have POSTed: failed, and never POSTed twice. */
const lostAttempt = (attempt: number): AttemptOutcome =>
  failedAttempt(attempt, {
    errorClass: 'timeout',
    errorMessage: 'attempt did not complete on the worker; it may have reached the partner, so it is not sent again',
  });

/**
 * An erasure cancelled the delivery and removed its payload while its run still lived: nothing is sent, and the
 * workflow's path for an unclaimed attempt loses it unrecorded until the erasure deletes the run.
 */
function erasedFailure(): ApplicationFailure {
  return ApplicationFailure.nonRetryable(
    'the webhook was erased on request: the attempt is not sent',
    ERASED_FAILURE_TYPE,
  );
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
