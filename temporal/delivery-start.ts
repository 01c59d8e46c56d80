import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { companyIdOf } from '../events/company-id';
import type { WebhookEventInput } from '../events/envelope';
import { COMPANY_ID, WEBHOOK_ACTION, WEBHOOK_EVENT_TYPE } from './search-attributes';
import type { deliverWebhook } from '../workflows/webhooks/deliver-webhook';
import type { DeliverWebhookInput } from '../workflows/types';

/**
 * A validated event with its ids and the workflow input built from it (application/ingestion/start-webhook.ts prepares
 * it).
 */
export interface PreparedWebhook {
  readonly eventId: string;
  readonly webhookId: string;
  readonly workflowId: string;
  readonly event: WebhookEventInput;
  readonly input: DeliverWebhookInput;
}

/**
 * Starts the delivery workflow of a prepared webhook. Idempotent: a workflow id that is running or has
 * run already yields the existing run, never a second delivery.
 */
export async function startDeliveryWorkflow(
  client: Client,
  webhook: PreparedWebhook,
  taskQueue: string,
  { eager = false } = {},
): Promise<string> {
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
      staticSummary:
        `${event.event_type}/${event.action} ` +
        `${redeliveryOf ? 'redelivery' : 'webhook'}${companyId ? ` of company ${companyId}` : ''}`,
      staticDetails:
        `event_id ${webhook.eventId}, webhook_id ` +
        `${webhook.webhookId}${redeliveryOf ? `, redelivery of webhook ${redeliveryOf}` : ''}`,
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
