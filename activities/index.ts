import type { Knex } from 'knex';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Config } from '../lib/config';
import type { Logger } from '../lib/logger';
import { storeAttempt, storeOutcome } from '../store/webhook-store';
import type { AttemptOutcome, RecordAttemptInput, RecordOutcomeInput, SendWebhookInput } from '../workflows/types';
import { createPartnerSender } from './partner-sender';

export interface ActivityDependencies {
  /** Read on every send, so a rotated token or endpoint applies to pending retries. */
  readonly config: () => Config;
  readonly knex: Knex;
  readonly logger: Logger;
}

/** The webhook activities, bound to their dependencies. Their names are part of every workflow history. */
export function createActivities({ config, knex, logger }: ActivityDependencies) {
  const sendToPartner = createPartnerSender({ config, logger });
  return {
    /**
     * At most one POST per attempt. Temporal retries this activity only when it lost a try; the heartbeat
     * recorded before the POST tells the retry whether that try may have reached the partner: then the
     * attempt counts as lost and is not sent again; otherwise the retry sends it.
     */
    async sendWebhook(input: SendWebhookInput): Promise<AttemptOutcome> {
      const { info } = Context.current();
      if (info.attempt > 1 && (info.heartbeatDetails as { posting?: boolean } | undefined)?.posting) {
        return lostAttempt(input.attempt);
      }
      Context.current().heartbeat({ posting: true });
      return sendToPartner(input);
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

/** An attempt whose try was lost after it may have POSTed: failed, and never POSTed twice. */
function lostAttempt(attempt: number): AttemptOutcome {
  return {
    attempt,
    startedAt: new Date().toISOString(),
    durationMs: 0,
    httpStatus: null,
    errorClass: 'timeout',
    errorMessage: 'attempt did not complete on the worker; it may have reached the partner, so it is not sent again',
    responseBody: null,
    succeeded: false,
  };
}

/** SQLSTATE classes that no retry can fix: data exceptions, integrity violations, program limits. */
const REJECTED_DATA = /^(22|23|54)/;

/**
 * An outage is retried (Temporal's retry policy); a row PostgreSQL rejects for what it contains would be
 * rejected forever, so it fails the activity once, non-retryably, and the workflow goes on without it.
 */
async function failPermanentlyOnRejectedData(write: () => Promise<void>): Promise<void> {
  try {
    await write();
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string' && REJECTED_DATA.test(code)) {
      throw ApplicationFailure.nonRetryable(`PostgreSQL rejected the record (SQLSTATE ${code}): ${(error as Error).message}`, 'RecordRejected');
    }
    throw error;
  }
}
