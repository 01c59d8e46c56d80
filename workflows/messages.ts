import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { RetryNowResult, WebhookDeliveryStatus } from './types';

/** Attempts so far, the current state and the time of the next attempt. */
export const webhookStatusQuery = defineQuery<WebhookDeliveryStatus>('webhookStatus');

/**
 * An operator's retry-now: cuts the wait for the next attempt short and makes it at once, recorded as manual.
 * Rejected (before it reaches the history) unless the delivery is waiting.
 */
export const retryNowUpdate = defineUpdate<RetryNowResult>('retryNow');
