import type { Knex } from 'knex';
import { companyIdOf } from '../events/company-id';
import type { WebhookEnvelope } from '../events/envelope';
import type { RecordAttemptInput, RecordOutcomeInput, WebhookRef } from '../workflows/types';

/** The webhook_events row of a webhook: the event's columns, its payload and its Temporal ids. */
export function webhookEventRow(webhook: WebhookRef & { event: WebhookEnvelope }) {
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

/** A record that reached PostgreSQL before the record that writes its webhook's row: retried until it exists. */
export class WebhookRowMissingError extends Error {
  constructor(webhookId: string) {
    super(`the row of webhook ${webhookId} is not written yet`);
    this.name = 'WebhookRowMissingError';
  }
}

/**
 * Makes sure the webhook's row exists and carries the workflow and run ids. A record that carries the event
 * creates a missing row (a workflow started by `startWebhook`); one without it only updates.
 */
async function ensureWebhookRow(trx: Knex.Transaction, webhook: WebhookRef): Promise<void> {
  const ids = {
    workflow_id: trx.raw('COALESCE(webhook_events.workflow_id, ?)', [webhook.workflowId]),
    run_id: trx.raw('COALESCE(webhook_events.run_id, ?)', [webhook.runId]),
    updated_at: trx.fn.now(),
  };
  if (webhook.event) {
    await trx('webhook_events').insert(webhookEventRow({ ...webhook, event: webhook.event })).onConflict('id').merge(ids);
    return;
  }
  const updated = await trx('webhook_events').where({ id: webhook.webhookId }).update(ids);
  if (updated === 0) throw new WebhookRowMissingError(webhook.webhookId);
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
