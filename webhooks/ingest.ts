import type { Knex } from 'knex';
import { webhookEventRow } from '../activities/attempt-store';
import { prepareWebhook, type PreparedWebhook, type StartedWebhook } from './start-webhook';
import { TemporalUnavailableError, type WebhookStarter } from './temporal-starter';

export interface AcceptedWebhook extends StartedWebhook {
  /** True when this call created the webhook; false when its event_id was known already. */
  readonly created: boolean;
}

/** A row can vanish between our insert conflict and our read when a concurrent start failed; insert again. */
const MAX_CLAIMS = 5;

/**
 * Accepts a validated webhook: records it under its event_id (the idempotency key), then starts its
 * workflow. A known event_id returns the existing webhook and starts nothing new. When Temporal could not be
 * reached, the row this call created is removed again and the error propagates: nothing is accepted without
 * a workflow. When Temporal was reached but the outcome is unknown, the row stays (without a run) and a retry
 * with the same event_id finds or starts the one workflow.
 */
export async function acceptWebhook(knex: Knex, starter: WebhookStarter, webhook: PreparedWebhook): Promise<AcceptedWebhook> {
  for (let claim = 1; ; claim++) {
    const accepted = await claimAndStart(knex, starter, webhook);
    if (accepted || claim === MAX_CLAIMS) {
      if (accepted) return accepted;
      throw new TemporalUnavailableError('the webhook row kept changing under concurrent starts; retry with the same event_id');
    }
  }
}

async function claimAndStart(knex: Knex, starter: WebhookStarter, webhook: PreparedWebhook): Promise<AcceptedWebhook | undefined> {
  const inserted = await knex('webhook_events')
    .insert(webhookEventRow({ ...webhook, event: webhook.input.event, runId: null, isTest: false }))
    // No conflict target: webhook_id derives from event_id, so a concurrent twin can clash on either key.
    .onConflict()
    .ignore()
    .returning('id');
  const created = inserted.length === 1;
  let target = webhook;
  if (!created) {
    const existing = await knex('webhook_events').where({ event_id: webhook.eventId }).first();
    if (!existing) return undefined;
    if (existing.run_id) {
      return { created, eventId: existing.event_id, webhookId: existing.id, workflowId: existing.workflow_id, runId: existing.run_id };
    }
    // Known but without a run: an earlier start failed or is still under way. Deliver what was stored first.
    target = prepareWebhook(
      { event_id: existing.event_id, event_type: existing.event_type, action: existing.action, data: existing.payload },
      webhook.input.sendTimeoutMs,
    );
  }

  let runId: string;
  try {
    // The row holds the event, so the workflow's records need carry only ids and outcomes.
    runId = await starter.start({ ...target, input: { ...target.input, eventStored: true } });
  } catch (error) {
    const outcomeUnknown = error instanceof TemporalUnavailableError && error.outcomeUnknown;
    if (created && !outcomeUnknown) await forgetUnstarted(knex, target.webhookId);
    throw error;
  }
  await knex('webhook_events').where({ id: target.webhookId }).whereNull('run_id').update({ run_id: runId, updated_at: knex.fn.now() });
  return { created, eventId: target.eventId, webhookId: target.webhookId, workflowId: target.workflowId, runId };
}

async function forgetUnstarted(knex: Knex, webhookId: string): Promise<void> {
  await knex('webhook_events')
    .where({ id: webhookId })
    .whereNull('run_id')
    .whereNotExists(knex('webhook_attempts').where({ webhook_id: webhookId }))
    .del();
}
