import { v4 as uuidv4, v5 as uuidv5 } from 'uuid';
import type { EventAction, EventType } from '../../events/envelope';

/** Fixed namespace of the webhook ids: the same event id always yields the same webhook id. */
const WEBHOOK_ID_NAMESPACE = '5b0d7a3e-3f1e-4a4c-9a0b-6a53a9b3c2d1';

export interface WebhookIds {
  readonly eventId: string;
  readonly webhookId: string;
  readonly workflowId: string;
}

/**
 * The one id scheme of the API, the CLI and `startWebhook`: the event id is the idempotency key, the
 * webhook id is derived from it (UUIDv5), and the workflow id reads well in Temporal UI.
 */
export function webhookIds(event: { event_type: EventType; action: EventAction; event_id?: string }): WebhookIds {
  const eventId = event.event_id ?? uuidv4();
  return {
    eventId,
    webhookId: uuidv5(eventId, WEBHOOK_ID_NAMESPACE),
    workflowId: `webhook-${event.event_type}-${event.action}-${eventId}`,
  };
}

/** A redelivery's own ids: a fresh webhook id, and a workflow id that reads as the original's redelivery. */
export function redeliveryIds(original: {
  event_type: EventType;
  action: EventAction;
  event_id: string;
}): Omit<WebhookIds, 'eventId'> {
  const webhookId = uuidv4();
  return { webhookId, workflowId: `${webhookIds(original).workflowId}-redelivery-${webhookId}` };
}
