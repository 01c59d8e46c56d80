import type { Knex } from 'knex';
import type { Config } from '../lib/config';
import type { Logger } from '../lib/logger';
import type { AttemptOutcome, RecordAttemptInput, RecordOutcomeInput, SendWebhookInput } from '../workflows/types';
import { storeAttempt, storeOutcome } from './attempt-store';
import { postWebhook, type PartnerSettings } from './http-delivery';

export interface ActivityDependencies {
  /** Read on every send, so a rotated token or endpoint applies to pending retries. */
  readonly config: () => Config;
  readonly knex: Knex;
  readonly logger: Logger;
}

/** The partner settings from configuration, or why a POST cannot be made. */
export function partnerSettings(config: Config): PartnerSettings | { missing: string } {
  if (!config.PARTNER_ENDPOINT) return { missing: 'PARTNER_ENDPOINT' };
  if (!config.PARTNER_ACCESS_TOKEN) return { missing: 'PARTNER_ACCESS_TOKEN' };
  return { endpoint: config.PARTNER_ENDPOINT, token: config.PARTNER_ACCESS_TOKEN, timeoutMs: config.PARTNER_TIMEOUT_MS };
}

/** The webhook activities, bound to their dependencies. Their names are part of every workflow history. */
export function createActivities({ config, knex, logger }: ActivityDependencies) {
  return {
    /** Exactly one POST; the workflow schedules it with maximumAttempts 1. */
    async sendWebhook(input: SendWebhookInput): Promise<AttemptOutcome> {
      const settings = partnerSettings(config());
      const outcome =
        'missing' in settings
          ? {
              attempt: input.attempt,
              startedAt: new Date().toISOString(),
              durationMs: 0,
              httpStatus: null,
              errorClass: 'other' as const,
              errorMessage: `${settings.missing} is not configured`,
              responseBody: null,
              succeeded: false,
            }
          : await postWebhook(settings, input);
      const { httpStatus, errorClass, durationMs, succeeded } = outcome;
      logger[succeeded ? 'info' : 'warn'](
        { webhookId: input.webhookId, attempt: input.attempt, httpStatus, errorClass, durationMs },
        succeeded ? 'webhook delivered' : 'webhook attempt failed',
      );
      return outcome;
    },

    /** Retried by Temporal until PostgreSQL accepts it. */
    async recordAttempt(input: RecordAttemptInput): Promise<void> {
      await storeAttempt(knex, input);
    },

    /** The final status, delivered or failed; retried the same way. */
    async recordOutcome(input: RecordOutcomeInput): Promise<void> {
      await storeOutcome(knex, input);
      logger.info({ webhookId: input.webhook.webhookId, status: input.status }, 'webhook finished');
    },
  };
}

export type WebhookActivities = ReturnType<typeof createActivities>;
