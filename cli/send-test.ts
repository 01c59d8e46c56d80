import type { Knex } from 'knex';
import { v4 as uuidv4 } from 'uuid';
import { createPostToPartner } from '../partner-client/partner-post';
import { prepareWebhook } from '../application/ingestion/start-webhook';
import type { Config } from '../lib/config';
import { dataAtRest } from '../lib/at-rest';
import type { Logger } from '../lib/logger';
import { insertWebhook } from '../store/ingestion/webhook-ingestion';
import { storeAttempt } from '../store/webhooks/attempt-record';
import { signingKeysNow } from '../store/partner/signing-secrets';
import type { WebhookRef } from '../lib/delivery';

/** The printed outcome of one test delivery, in the snake_case of the status URL. */
export interface TestDeliveryReport {
  readonly webhook_id: string;
  readonly event_id: string;
  readonly is_test: true;
  readonly attempt: 1;
  readonly scheduled_at: string;
  readonly started_at: string;
  readonly duration_ms: number;
  readonly http_status: number | null;
  readonly error_class: string | null;
  readonly error_message: string | null;
  readonly response_body: string | null;
  readonly succeeded: boolean;
}

/**
 * Validates an event and runs exactly one attempt against the configured endpoint with `deliverAttempt`'s
 * own POST and the statements of every delivery, without Temporal: the row is written first, as ingestion
 * writes it, then the attempt and the final status in one statement, marked as a test. A fresh `test-…` event
 * id keeps test rows apart from the idempotency keys of real webhooks.
 */
export async function sendTestWebhook(
  config: Config,
  knex: Knex,
  logger: Logger,
  event: unknown,
): Promise<TestDeliveryReport> {
  const prepared = prepareWebhook({ ...(event as object), event_id: `test-${uuidv4()}` }, config.PARTNER_TIMEOUT_MS);
  const webhook: WebhookRef = { ...prepared, workflowId: null, runId: null, isTest: true };
  await insertWebhook(knex, dataAtRest(config), { ...webhook, event: prepared.input.event });
  const scheduledAt = new Date().toISOString();
  // Signed as the worker signs: with every live secret, the partner API's too.
  const signingKeys = async () => (await signingKeysNow(knex, config, dataAtRest(config))).keys;
  const outcome = await createPostToPartner({ config: () => config, logger, signingKeys })({
    webhookId: prepared.webhookId,
    attempt: 1,
    event: prepared.input.event,
  });
  const finish = {
    status: outcome.succeeded ? ('delivered' as const) : ('failed' as const),
    finishedAt: new Date().toISOString(),
  };
  await storeAttempt(knex, dataAtRest(config), { webhook, attempt: { ...outcome, scheduledAt } }, finish);
  return {
    webhook_id: prepared.webhookId,
    event_id: prepared.eventId,
    is_test: true,
    attempt: 1,
    scheduled_at: scheduledAt,
    started_at: outcome.startedAt,
    duration_ms: outcome.durationMs,
    http_status: outcome.httpStatus,
    error_class: outcome.errorClass,
    error_message: outcome.errorMessage,
    response_body: outcome.responseBody,
    succeeded: outcome.succeeded,
  };
}
