// The package's public API for upstream systems that start webhooks with their own Temporal client.
export {
  startWebhook,
  prepareWebhook,
  WebhookValidationError,
  DEFAULT_TASK_QUEUE,
  type StartWebhookOptions,
  type StartedWebhook,
  type PreparedWebhook,
} from './application/start-webhook';
export { webhookIds, type WebhookIds } from './application/ids';
export * from './events';
export { webhookStatusQuery } from './workflows/messages';
export { WEBHOOK_SEARCH_ATTRIBUTES, WEBHOOK_EVENT_TYPE, WEBHOOK_ACTION, WEBHOOK_STATUS, COMPANY_ID } from './temporal/search-attributes';
export type { AttemptRecord } from './lib/delivery';
export type {
  DeliverWebhookInput,
  DeliveryState,
  DeliverySummary,
  WebhookDeliveryStatus,
} from './workflows/types';
