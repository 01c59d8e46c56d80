// The workflow bundle's entry point: only workflow code may be exported from here.
export { deliverWebhook } from './deliver-webhook';
export { eraseSubject } from './erase-subject';
export { partnerReleasedSignal, retryNowUpdate, webhookStatusQuery } from './messages';
export { webhookRetention } from './retention';
