import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { companyIdOf } from '../events/company-id';
import { parseWebhookEvent, toEnvelope, type WebhookEnvelope, type WebhookEventInput } from '../events/envelope';
import { DEFAULT_TASK_QUEUE } from '../lib/config';
import { DEFAULT_SEND_TIMEOUT_MS } from '../lib/delivery';
import { formatPathError, type PathError } from '../lib/validation';
import { COMPANY_ID, WEBHOOK_ACTION, WEBHOOK_EVENT_TYPE } from '../temporal/search-attributes';
import type { deliverWebhook } from '../workflows/deliver-webhook';
import type { DeliverWebhookInput } from '../workflows/types';
import { webhookIds, type WebhookIds } from './ids';
import type { StoredWebhook } from '../store/webhook-rows';
import { PayloadRemovedError } from './operation-errors';

// Starting a webhook's delivery: the event validated, its ids, the workflow input, and the one start call
// (startDeliveryWorkflow), used by the package's startWebhook and by the Temporal gateway (temporal-gateway.ts).

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

/** The event a stored webhook holds; PayloadRemovedError when the retention purge or an erasure removed it. */
export function storedEvent(stored: StoredWebhook): WebhookEnvelope {
  if (stored.event === null) throw new PayloadRemovedError(stored.webhookId, stored.payloadRemovedAt!, stored.payloadRemovedReason!);
  return stored.event;
}

/** A stored webhook as its workflow's start needs it: the event as first stored, validated when it was. */
export function storedDelivery(stored: StoredWebhook, sendTimeoutMs = DEFAULT_SEND_TIMEOUT_MS): PreparedWebhook {
  const { webhookId, eventId, workflowId } = stored;
  const event = storedEvent(stored);
  return { webhookId, eventId, workflowId, event: { event_id: eventId, ...event }, input: { webhookId, eventId, event, sendTimeoutMs } };
}

/**
 * Starts the delivery workflow of a prepared webhook. Idempotent: a workflow id that is running or has
 * run already yields the existing run, never a second delivery.
 */
export async function startDeliveryWorkflow(client: Client, webhook: PreparedWebhook, taskQueue: string, { eager = false } = {}): Promise<string> {
  const { event } = webhook;
  const { redeliveryOf } = webhook.input;
  const companyId = companyIdOf(event);
  try {
    const handle = await client.workflow.start<typeof deliverWebhook>('deliverWebhook', {
      workflowId: webhook.workflowId,
      taskQueue,
      args: [webhook.input],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      requestEagerStart: eager,
      typedSearchAttributes: [
        { key: WEBHOOK_EVENT_TYPE, value: event.event_type },
        { key: WEBHOOK_ACTION, value: event.action },
        ...(companyId ? [{ key: COMPANY_ID, value: companyId }] : []),
      ],
      staticSummary: `${event.event_type}/${event.action} ${redeliveryOf ? 'redelivery' : 'webhook'}${companyId ? ` of company ${companyId}` : ''}`,
      staticDetails: `event_id ${webhook.eventId}, webhook_id ${webhook.webhookId}${redeliveryOf ? `, redelivery of webhook ${redeliveryOf}` : ''}`,
      // The link back to the original, readable in Temporal UI and by any client.
      ...(redeliveryOf && { memo: { redelivery_of: redeliveryOf } }),
    });
    return handle.firstExecutionRunId;
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    const description = await client.workflow.getHandle(webhook.workflowId).describe();
    return description.runId;
  }
}
