import type { Knex } from 'knex';
import type { DataAtRest } from '../../lib/at-rest';
import { claimEvent, forgetUnstartedWebhook, recordRun } from '../../store/ingestion/webhook-ingestion';
import { storedDelivery, type StartedWebhook } from './start-webhook';
import type { PreparedWebhook } from '../../temporal/delivery-start';
import { type TemporalGateway } from '../../temporal/gateway';
import { WebhookStartConflictError, TemporalUnavailableError } from '../../lib/errors';

export interface AcceptedWebhook extends StartedWebhook {
  /** True when this call started the delivery; false when an earlier call had (its event_id was known). */
  readonly started: boolean;
}

/** A row can vanish between our insert's conflict and our read when a concurrent start failed; claim again. */
const MAX_CLAIMS = 5;

/**
 * Accepts a validated webhook: records it under its event_id (the idempotency key), then starts its
 * workflow. A known event_id whose start was reported returns that webhook and starts nothing new. When
 * Temporal could not be reached, the row is removed again and the error propagates: nothing is accepted
 * without a workflow. When Temporal was reached but the outcome is unknown, the row stays without a run (the
 * status URL says it has not started) and a retry with the same event_id finds or starts the one workflow,
 * with the event as first stored.
 */
export async function acceptWebhook(
  knex: Knex,
  atRest: DataAtRest,
  gateway: TemporalGateway,
  webhook: PreparedWebhook,
): Promise<AcceptedWebhook> {
  for (let attempt = 1; attempt <= MAX_CLAIMS; attempt++) {
    const claim = await claimEvent(knex, atRest, {
      ...webhook,
      event: webhook.input.event,
      orderingKey: webhook.input.orderingKey,
      runId: null,
      isTest: webhook.input.isTest === true,
    });
    if (claim.kind === 'gone') continue;
    const { webhookId, eventId, workflowId } = claim.webhook;
    if (claim.kind === 'reported')
      return { started: false, eventId, webhookId, workflowId, runId: claim.webhook.runId };
    // Deliver what was stored first: an earlier call's start may have failed, be in doubt or be under way.
    // The key marks the delivery ordered; its lane and number are the row's place, written with the row.
    const stored = storedDelivery(claim.webhook, webhook.input.sendTimeoutMs);
    const { orderingKey, isTest } = webhook.input;
    const delivery = {
      ...stored,
      input: {
        ...stored.input,
        ...(orderingKey !== undefined && { orderingKey }),
        ...(isTest === true && { isTest }),
      },
    };
    const runId = await startOrForget(knex, gateway, delivery);
    return {
      started: await recordRun(knex, webhookId, runId, { reported: true }),
      eventId,
      webhookId,
      workflowId,
      runId,
    };
  }
  throw new WebhookStartConflictError(webhook.eventId);
}

/**
 * Starts a stored webhook's workflow. A start that certainly failed takes the row back with it (unless
 * anything happened to the row since); one whose outcome is unknown leaves it for a retry to find.
 */
export async function startOrForget(knex: Knex, gateway: TemporalGateway, webhook: PreparedWebhook): Promise<string> {
  try {
    return await gateway.start(webhook);
  } catch (error) {
    if (!(error instanceof TemporalUnavailableError && error.outcomeUnknown))
      await forgetUnstartedWebhook(knex, webhook.webhookId);
    throw error;
  }
}
