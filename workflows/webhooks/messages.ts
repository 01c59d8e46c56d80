import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { RetryNowResult, WebhookDeliveryStatus } from '../types';
import type { BlockedDecision } from '../../lib/delivery';

/** Attempts so far, the current state and the time of the next attempt. */
export const webhookStatusQuery = defineQuery<WebhookDeliveryStatus>('webhookStatus');

/**
 * An operator's retry-now: cuts the wait for the next attempt short and makes it at once, recorded as manual.
 * Rejected (before it reaches the history) unless the delivery is waiting.
 */
export const retryNowUpdate = defineUpdate<RetryNowResult>('retryNow');

/** The partner recovery's word that the hold is over: a held delivery claims its attempt again, at the cap. */
export const partnerReleasedSignal = defineSignal('partnerReleased');

/**
 * An ordered webhook's wake: the webhook ahead of it in its key settled (or the sweep found none ahead). The
 * queued delivery asks its lane again; a wake that finds it not queued changes nothing.
 */
export const orderingTurnSignal = defineSignal('orderingTurn');

/**
 * An operator's decision for a blocked ordered head (WEBHOOK_ORDERING_ON_FAILURE=block): `skip` ends it as
 * failed, leaving a gap, and its key goes on; `retry` makes one more attempt now. Rejected unless blocked.
 */
export const orderingDecisionUpdate = defineUpdate<{ decision: BlockedDecision }, [BlockedDecision]>(
  'orderingDecision',
);
