import type { Client } from '@temporalio/client';
import { parseWebhookEvent, toEnvelope, type WebhookEnvelope, type WebhookEventInput } from '../../events/envelope';
import { DEFAULT_TASK_QUEUE, WEBHOOK_ORDERING_DEFAULT } from '../../lib/config';
import { DEFAULT_SEND_TIMEOUT_MS } from '../../lib/delivery';
import { startDeliveryWorkflow, type PreparedWebhook } from '../../temporal/delivery-start';
import { webhookIds, type WebhookIds } from './ids';
import { orderingKeyOf } from '../../events/ordering-key';
import type { StoredWebhook } from '../../store/webhooks/webhook-rows';
import { WebhookValidationError, PayloadRemovedError } from '../../lib/errors';

// Preparing a webhook's delivery: the event validated, its ids and the workflow input; the package's
// startWebhook, which starts it through the one start call (temporal/delivery-start.ts).

/** Whether webhooks get an ordering key (WEBHOOK_ORDERING): `entity`, or `off` (every webhook unordered). */
export type OrderingMode = 'entity' | 'off';

/**
 * Validates an event (throws WebhookValidationError with path-level errors) and derives its ids and, with
 * `ordering` on, its ordering key (events/ordering-key.ts), which the workflow input carries: a webhook whose
 * input has a key is delivered in its key's order.
 */
export function prepareWebhook(
  event: unknown,
  sendTimeoutMs = DEFAULT_SEND_TIMEOUT_MS,
  ordering: OrderingMode = WEBHOOK_ORDERING_DEFAULT,
): PreparedWebhook {
  const parsed = parseWebhookEvent(event);
  if (!parsed.success) throw new WebhookValidationError(parsed.errors);
  const ids = webhookIds(parsed.event);
  const orderingKey = ordering === 'entity' ? orderingKeyOf(parsed.event, parsed.event.ordering_key) : undefined;
  return {
    ...ids,
    event: parsed.event,
    input: {
      webhookId: ids.webhookId,
      eventId: ids.eventId,
      event: toEnvelope(parsed.event),
      sendTimeoutMs,
      ...(orderingKey !== undefined && { orderingKey }),
    },
  };
}

export interface StartWebhookOptions {
  /** Defaults to partner-webhooks, the worker's default TEMPORAL_TASK_QUEUE. */
  readonly taskQueue?: string;
  /** The per-attempt HTTP timeout the worker uses (PARTNER_TIMEOUT_MS); defaults to 30000. */
  readonly sendTimeoutMs?: number;
  /** WEBHOOK_ORDERING of the service; defaults to its default, `entity`. */
  readonly ordering?: OrderingMode;
}

export interface StartedWebhook extends WebhookIds {
  readonly runId: string;
}

/**
 * For upstream systems with their own Temporal client: the same validation and id scheme as
 * POST /internal/v1/webhooks. The webhook's PostgreSQL row is written by the workflow's first record.
 */
export async function startWebhook(
  client: Client,
  event: WebhookEventInput,
  options: StartWebhookOptions = {},
): Promise<StartedWebhook> {
  const webhook = prepareWebhook(event, options.sendTimeoutMs, options.ordering);
  const runId = await startDeliveryWorkflow(client, webhook, options.taskQueue ?? DEFAULT_TASK_QUEUE);
  return { eventId: webhook.eventId, webhookId: webhook.webhookId, workflowId: webhook.workflowId, runId };
}

/** The event a stored webhook holds; PayloadRemovedError when the retention purge or an erasure removed it. */
export function storedEvent(stored: StoredWebhook): WebhookEnvelope {
  if (stored.event === null)
    throw new PayloadRemovedError(stored.webhookId, stored.payloadRemovedAt!, stored.payloadRemovedReason!);
  return stored.event;
}

/** A stored webhook as its workflow's start needs it: the event as first stored, validated when it was. */
export function storedDelivery(stored: StoredWebhook, sendTimeoutMs = DEFAULT_SEND_TIMEOUT_MS): PreparedWebhook {
  const { webhookId, eventId, workflowId } = stored;
  const event = storedEvent(stored);
  return {
    webhookId,
    eventId,
    workflowId,
    event: { event_id: eventId, ...event },
    input: { webhookId, eventId, event, sendTimeoutMs },
  };
}
