// The workflow's own contract with its starters and clients: its input, its status query, its retry-now update
// and its result. The delivery model it shares with the activities and the store is lib/delivery.ts. Type-only
// imports keep the workflow bundle free of non-deterministic code.
import type { WebhookEnvelope } from '../events/envelope';
import type { AttemptRecord, FinalStatus } from '../lib/delivery';

/**
 * The record activities run on their own task queue beside the delivery queue, so PARTNER_MAX_CONCURRENCY
 * and PARTNER_MAX_PER_SECOND bound only the POSTs to the partner, and a backlog of records never slows them.
 */
export const recordsTaskQueue = (deliveryTaskQueue: string): string => `${deliveryTaskQueue}-records`;

/** The workflow input. It never carries the partner token: the attempt reads it at send time. */
export interface DeliverWebhookInput {
  readonly webhookId: string;
  readonly eventId: string;
  readonly event: WebhookEnvelope;
  /** The HTTP timeout of one attempt; the attempt's startToCloseTimeout adds a margin to it. */
  readonly sendTimeoutMs?: number;
  /** Set on a redelivery: the id of the original webhook, which every attempt sends as its webhook-id header. */
  readonly redeliveryOf?: string;
  /**
   * The ordering key, when the webhook is ordered (WEBHOOK_ORDERING=entity): its first attempt waits until every
   * earlier webhook of the key has settled. Never in a search attribute, a summary or a log line.
   */
  readonly orderingKey?: string;
  /**
   * A redelivery of an ordered webhook: the original's key and sequence number, sent as its headers. It goes out of
   * band, unless `inLane`.
   */
  readonly ordering?: { readonly key: string; readonly sequence: number };
  /** A partner's test event (POST /partner/v1/test-events): its attempts are marked as a test in the log. */
  readonly isTest?: boolean;
  /**
   * A recovery's redelivery of an ordered webhook: it has a place of its own in `ordering.key`'s lane (written with
   * its row, in the originals' order), waits its turn there like a new webhook and settles it, still sending the
   * original's key and number.
   */
  readonly inLane?: true;
}

export type DeliveryState =
  'queued' | 'sending' | 'held' | 'waiting' | 'blocked' | 'delivered' | 'failed' | 'cancelled';

/** The answer of the status query. */
export interface WebhookDeliveryStatus {
  readonly webhookId: string;
  readonly eventId: string;
  readonly state: DeliveryState;
  readonly attempts: readonly AttemptRecord[];
  /** ISO 8601 time of the next attempt while waiting, otherwise null. */
  readonly nextAttemptAt: string | null;
}

/** The answer of an accepted retry-now: the attempt that is made at once. */
export interface RetryNowResult {
  readonly attempt: number;
}

/** The workflow result: a failed delivery is a business outcome, so the workflow still completes. */
export interface DeliverySummary {
  readonly webhookId: string;
  readonly eventId: string;
  readonly status: Exclude<FinalStatus, 'cancelled'>;
  readonly attempts: readonly AttemptRecord[];
}

/** The workflow id of an erasure: one per request, so a repeated start finds the same run. */
export const erasureWorkflowId = (erasureId: string): string => `erasure-${erasureId}`;

/** The erasure workflow's input: the record it reads its subject and company from (never the subject itself). */
export interface EraseSubjectInput {
  readonly erasureId: string;
  /** Set by a continue-as-new during the index: the id the index goes on after. */
  readonly indexedUpTo?: string;
  /** Set by a continue-as-new while sweeping Temporal: the index and the erasing step are done. */
  readonly sweeping?: boolean;
  /** Sweeps made before the continue-as-new, so the pace goes on where it was. */
  readonly sweeps?: number;
}

/** What an erasure did, as its workflow returns it. */
export interface ErasureSummary {
  readonly erasureId: string;
  readonly webhooksFound: number;
  readonly deliveriesCancelled: number;
  readonly bodiesRemoved: number;
  readonly runsDeleted: number;
}

/** A partner's recovery (partner_recoveries): its workflow works through it in batches. */
export interface RecoverWebhooksInput {
  readonly recoveryId: string;
  /** Carried over a continue-as-new: the batches run and redeliveries started so far. */
  readonly batches?: number;
  readonly started?: number;
}

/** One batch of a recovery: how many redeliveries it started, and whether the recovery has ended (and how). */
export interface RecoveryBatchResult {
  readonly started: number;
  readonly ended?: 'completed' | 'cancelled';
}

/** The activity of the recovery workflow: it runs on the records queue (PostgreSQL and Temporal's starts). */
export interface RecoveryActivities {
  runRecoveryBatch(recoveryId: string): Promise<RecoveryBatchResult>;
}

export interface RecoverySummary {
  readonly recoveryId: string;
  readonly batches: number;
  readonly started: number;
  readonly ended: 'completed' | 'cancelled';
}

/** A recovery's workflow id: one per recovery, so a repeated start finds the running one. */
export const recoveryWorkflowId = (recoveryId: string): string => `recovery-${recoveryId}`;
