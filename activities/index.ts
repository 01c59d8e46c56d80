import type { Knex } from 'knex';
import { ApplicationFailure } from '@temporalio/common';
import type { Config } from '../lib/config';
import type { Logger } from '../lib/logger';
import { claimAttempt, storeAttempt, storeOutcome } from '../store/webhook-store';
import type { AttemptOutcome, DeliverAttemptInput, DeliveredAttempt, FinalStatus, RecordAttemptInput, RecordOutcomeInput } from '../workflows/types';
import { failedAttempt } from '../workflows/failed-attempt';
import { expiredSignedLinks } from '../events/signed-links';
import { createPacer } from './pacer';
import { createPostToPartner } from './partner-post';

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
}

/** The webhook activities, bound to their dependencies. Their names are part of every workflow history. */
export function createActivities({ config, knex, logger, draining, now = () => new Date() }: ActivityDependencies) {
  const postToPartner = createPostToPartner({ config, logger });
  const awaitSlot = createPacer(config().PARTNER_MAX_PER_SECOND);

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

  return {
    /**
     * One attempt, as a local activity: claim it in PostgreSQL, POST, record the outcome (with the final status
     * when it ends the delivery). Anything that fails before the claim is retried, nothing POSTed yet; a try
     * that finds the attempt claimed by an earlier one never POSTs. After the POST nothing throws: a record that
     * cannot be written in time comes back as `needsRecord`, and the workflow writes it through the retried
     * record activities.
     */
    async deliverAttempt(input: DeliverAttemptInput): Promise<DeliveredAttempt> {
      await awaitSlot();
      if (draining?.aborted) throw drainingFailure();
      const claim = await failPermanentlyOnRejectedData(() => claimAttempt(knex, input.webhook, input.attempt));
      if (claim.kind === 'recorded') return { outcome: claim.outcome, needsRecord: false };
      const outcome = claim.kind === 'claimed' ? await postClaimed(input, claim.acceptedAt) : lostAttempt(input.attempt);
      const status: FinalStatus | undefined = outcome.succeeded ? 'delivered' : input.finalOnFailure ? 'failed' : undefined;
      const finish = status && { status, finishedAt: new Date().toISOString() };
      const write = storeAttempt(knex, { webhook: input.webhook, attempt: { ...outcome, scheduledAt: input.scheduledAt, trigger: input.trigger } }, finish);
      const written = await withinMs(write, RECORD_TIMEOUT_MS).then(
        () => true,
        (error: unknown) => {
          logger.warn({ err: error, webhookId: input.webhookId, attempt: input.attempt }, 'recording the attempt failed; the workflow records it');
          return false;
        },
      );
      if (written && finish) logger.info({ webhookId: input.webhookId, status: finish.status }, 'webhook finished');
      return { outcome, needsRecord: !written };
    },

    /** Retried by Temporal until PostgreSQL accepts it, unless PostgreSQL rejects the data itself. */
    async recordAttempt(input: RecordAttemptInput): Promise<void> {
      await failPermanentlyOnRejectedData(() => storeAttempt(knex, input));
    },

    /** The final status, delivered or failed; retried the same way. */
    async recordOutcome(input: RecordOutcomeInput): Promise<void> {
      await failPermanentlyOnRejectedData(() => storeOutcome(knex, input));
      logger.info({ webhookId: input.webhook.webhookId, status: input.status }, 'webhook finished');
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
      throw ApplicationFailure.nonRetryable(`PostgreSQL rejected the record (SQLSTATE ${code}): ${(error as Error).message}`, 'RecordRejected');
    }
    throw error;
  }
}
