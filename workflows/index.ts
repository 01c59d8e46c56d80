// The workflow bundle's entry point: only workflow code may be exported from here.
export { deliverWebhook } from './webhooks/deliver-webhook';
export { eraseSubject } from './personal-data/erase-subject';
export { recoverWebhooks } from './webhooks/recover-webhooks';
export { partnerReleasedSignal, retryNowUpdate, webhookStatusQuery } from './webhooks/messages';
export { webhookRetention } from './personal-data/retention';
