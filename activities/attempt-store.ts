import type { Knex } from 'knex';
import { companyIdOf } from '../events/company-id';
import type { RecordAttemptInput, RecordOutcomeInput, WebhookRef } from '../workflows/types';

/** The webhook_events row of a webhook: the event's columns, its payload and its Temporal ids. */
export function webhookEventRow(webhook: WebhookRef) {
  return {
    id: webhook.webhookId,
    event_id: webhook.eventId,
    event_type: webhook.event.event_type,
    action: webhook.event.action,
    company_id: companyIdOf(webhook.event) ?? null,
    payload: JSON.stringify(webhook.event.data),
    workflow_id: webhook.workflowId,
    run_id: webhook.runId,
    is_test: webhook.isTest,
  };
}

/**
 * Creates the webhook's row when missing (a workflow started by `startWebhook` has none yet) and fills in
 * the workflow and run ids the API did not know yet. Never changes an existing row's event data.
 */
async function ensureWebhookRow(trx: Knex.Transaction, webhook: WebhookRef): Promise<void> {
  await trx('webhook_events')
    .insert(webhookEventRow(webhook))
    .onConflict('id')
    .merge({
      workflow_id: trx.raw('COALESCE(webhook_events.workflow_id, excluded.workflow_id)'),
      run_id: trx.raw('COALESCE(webhook_events.run_id, excluded.run_id)'),
      updated_at: trx.fn.now(),
    });
}

/** Idempotent on (webhook, attempt): a retried call after a lost reply finds the row and changes nothing. */
export async function storeAttempt(knex: Knex, { webhook, attempt }: RecordAttemptInput): Promise<void> {
  await knex.transaction(async (trx) => {
    await ensureWebhookRow(trx, webhook);
    await trx('webhook_attempts')
      .insert({
        webhook_id: webhook.webhookId,
        attempt: attempt.attempt,
        scheduled_at: attempt.scheduledAt,
        started_at: attempt.startedAt,
        duration_ms: attempt.durationMs,
        http_status: attempt.httpStatus,
        error_class: attempt.errorClass,
        error_message: attempt.errorMessage,
        response_body: attempt.responseBody,
        succeeded: attempt.succeeded,
        is_test: webhook.isTest,
      })
      .onConflict(['webhook_id', 'attempt'])
      .ignore();
  });
}

/** Idempotent: the first recorded finish time stays. */
export async function storeOutcome(knex: Knex, { webhook, status, finishedAt }: RecordOutcomeInput): Promise<void> {
  await knex.transaction(async (trx) => {
    await ensureWebhookRow(trx, webhook);
    await trx('webhook_events')
      .where({ id: webhook.webhookId })
      .update({ status, finished_at: trx.raw('COALESCE(finished_at, ?)', [finishedAt]), updated_at: trx.fn.now() });
  });
}
