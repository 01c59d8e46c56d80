import type { Client } from '@temporalio/client';
import { parseWebhookEvent, toEnvelope, type WebhookEventInput } from '../events/envelope';
import { DEFAULT_TASK_QUEUE } from '../lib/config';
import { formatPathError, type PathError } from '../lib/validation';
import { DEFAULT_SEND_TIMEOUT_MS, type DeliverWebhookInput } from '../workflows/types';
import { webhookIds, type WebhookIds } from './ids';
import type { StoredWebhook } from '../store/webhook-rows';
import { startDeliveryWorkflow } from './temporal-gateway';

export { DEFAULT_TASK_QUEUE };

export class WebhookValidationError extends Error {
  constructor(readonly errors: readonly PathError[]) {
    super(`Invalid webhook event: ${errors.map(formatPathError).join('; ')}`);
    this.name = 'WebhookValidationError';
  }
}

/** A validated event with its ids and the workflow input built from it. */
export interface PreparedWebhook extends WebhookIds {
  readonly event: WebhookEventInput;
  readonly input: DeliverWebhookInput;
}

/** Validates an event (throws WebhookValidationError with path-level errors) and derives its ids. */
export function prepareWebhook(event: unknown, sendTimeoutMs = DEFAULT_SEND_TIMEOUT_MS): PreparedWebhook {
  const parsed = parseWebhookEvent(event);
  if (!parsed.success) throw new WebhookValidationError(parsed.errors);
  const ids = webhookIds(parsed.event);
  return {
    ...ids,
    event: parsed.event,
    input: { webhookId: ids.webhookId, eventId: ids.eventId, event: toEnvelope(parsed.event), sendTimeoutMs },
  };
}

export interface StartWebhookOptions {
  /** Defaults to partner-webhooks, the worker's default TEMPORAL_TASK_QUEUE. */
  readonly taskQueue?: string;
  /** The per-attempt HTTP timeout the worker uses (PARTNER_TIMEOUT_MS); defaults to 30000. */
  readonly sendTimeoutMs?: number;
}

export interface StartedWebhook extends WebhookIds {
  readonly runId: string;
}

/**
 * For upstream systems with their own Temporal client: the same validation and id scheme as
 * POST /internal/v1/webhooks. The webhook's PostgreSQL row is written by the workflow's first record.
 */
export async function startWebhook(client: Client, event: WebhookEventInput, options: StartWebhookOptions = {}): Promise<StartedWebhook> {
  const webhook = prepareWebhook(event, options.sendTimeoutMs);
  const runId = await startDeliveryWorkflow(client, webhook, options.taskQueue ?? DEFAULT_TASK_QUEUE);
  return { eventId: webhook.eventId, webhookId: webhook.webhookId, workflowId: webhook.workflowId, runId };
}

/** A stored webhook as its workflow's start needs it: the event as first stored, validated when it was. */
export function storedDelivery(stored: StoredWebhook, sendTimeoutMs = DEFAULT_SEND_TIMEOUT_MS): PreparedWebhook {
  const { webhookId, eventId, workflowId, event } = stored;
  return { webhookId, eventId, workflowId, event: { event_id: eventId, ...event }, input: { webhookId, eventId, event, sendTimeoutMs } };
}
