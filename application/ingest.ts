import type { Knex } from 'knex';
import { findWebhookByEventId, forgetUnstartedWebhook, insertWebhook, reportStart } from '../store/webhook-store';
import { prepareWebhook, type PreparedWebhook, type StartedWebhook } from './start-webhook';
import { TemporalUnavailableError, type TemporalGateway } from './temporal-gateway';

export interface AcceptedWebhook extends StartedWebhook {
  /** True when this call started the delivery; false when an earlier call had (its event_id was known). */
  readonly started: boolean;
}

/** A row can vanish between our insert conflict and our read when a concurrent start failed; insert again. */
const MAX_CLAIMS = 5;

/**
 * Accepts a validated webhook: records it under its event_id (the idempotency key), then starts its
 * workflow. A known event_id whose run is recorded returns that webhook and starts nothing new. When Temporal
 * could not be reached, the row this call created is removed again and the error propagates: nothing is
 * accepted without a workflow. When Temporal was reached but the outcome is unknown, the row stays without a
 * run (the status URL says it has not started) and a retry with the same event_id finds or starts the one
 * workflow, with the event as first stored.
 */
export async function acceptWebhook(knex: Knex, gateway: TemporalGateway, webhook: PreparedWebhook): Promise<AcceptedWebhook> {
  for (let claim = 1; ; claim++) {
    const accepted = await claimAndStart(knex, gateway, webhook);
    if (accepted || claim === MAX_CLAIMS) {
      if (accepted) return accepted;
      throw new TemporalUnavailableError('the webhook row kept changing under concurrent starts; retry with the same event_id');
    }
  }
}

async function claimAndStart(knex: Knex, gateway: TemporalGateway, webhook: PreparedWebhook): Promise<AcceptedWebhook | undefined> {
  const created = await insertWebhook(knex, { ...webhook, event: webhook.input.event, runId: null, isTest: false });
  let target = webhook;
  if (!created) {
    const existing = await findWebhookByEventId(knex, webhook.eventId);
    if (!existing) return undefined;
    const { runId, ...ids } = existing;
    if (ids.startReported && runId) return { started: false, eventId: ids.eventId, webhookId: ids.webhookId, workflowId: ids.workflowId, runId };
    // Not reported yet: an earlier start failed, was in doubt or is still under way. Deliver what was stored first.
    target = prepareWebhook({ event_id: existing.eventId, ...existing.event }, webhook.input.sendTimeoutMs);
  }

  let runId: string;
  try {
    // The row holds the event, so the workflow's records need carry only ids and outcomes.
    runId = await gateway.start({ ...target, input: { ...target.input, eventStored: true } });
  } catch (error) {
    const outcomeUnknown = error instanceof TemporalUnavailableError && error.outcomeUnknown;
    if (created && !outcomeUnknown) await forgetUnstartedWebhook(knex, target.webhookId);
    throw error;
  }
  // The call that records the run is the one that started the delivery, as far as any caller can tell.
  const started = await reportStart(knex, target.webhookId, runId);
  return { started, eventId: target.eventId, webhookId: target.webhookId, workflowId: target.workflowId, runId };
}
