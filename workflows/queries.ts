import { defineQuery } from '@temporalio/workflow';
import type { WebhookDeliveryStatus } from './types';

/** Attempts so far, the current state and the time of the next attempt. */
export const webhookStatusQuery = defineQuery<WebhookDeliveryStatus>('webhookStatus');
