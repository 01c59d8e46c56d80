// The package's public API for upstream systems that start webhooks with their own Temporal client.
export {
  startWebhook,
  prepareWebhook,
  type StartWebhookOptions,
  type StartedWebhook,
} from './application/ingestion/start-webhook';
export { DEFAULT_TASK_QUEUE } from './lib/config';
export type { PreparedWebhook } from './temporal/delivery-start';
export { WebhookValidationError } from './lib/errors';
export { webhookIds, type WebhookIds } from './application/ingestion/ids';
export * from './events';
export { webhookStatusQuery } from './workflows/webhooks/messages';
export {
  WEBHOOK_SEARCH_ATTRIBUTES,
  WEBHOOK_EVENT_TYPE,
  WEBHOOK_ACTION,
  WEBHOOK_STATUS,
  COMPANY_ID,
} from './temporal/search-attributes';
export type { AttemptRecord } from './lib/delivery';
export type { DeliverWebhookInput, DeliveryState, DeliverySummary, WebhookDeliveryStatus } from './workflows/types';
