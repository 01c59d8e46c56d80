// The delivery model: what an attempt sends and comes to, the row it is recorded on, how a delivery ends, and
// the retry schedule. Shared by the workflow, the activities and the store, so it sits at the bottom: it imports
// only lib/vocabulary.ts, lib/partner-states.ts and events/ types, and holds nothing but types, constants and
// pure functions (the workflow bundle takes `failedAttempt` and the schedule from here, so nothing here may be
// non-deterministic).
import type { WebhookEnvelope } from '../events/envelope';
import type { HoldState } from './partner-states';
import type { AttemptErrorClass, AttemptTrigger, SignedLinkKind } from './vocabulary';

/** Spec section 8: the first attempt plus 3 retries, after 10 s, 100 s and 1000 s. */
export const MAX_ATTEMPTS = 4;
export const RETRY_DELAYS_MS: readonly number[] = [10_000, 100_000, 1_000_000];

/** Default per-attempt HTTP timeout (PARTNER_TIMEOUT_MS) when the starter does not pass one. */
export const DEFAULT_SEND_TIMEOUT_MS = 30_000;

/** What one POST to the partner needs. */
export interface WebhookPostInput {
  readonly webhookId: string;
  readonly attempt: number;
  readonly event: WebhookEnvelope;
  /**
   * The HTTP timeout the activity's startToCloseTimeout was sized for. The POST uses the smaller of this and
   * the worker's PARTNER_TIMEOUT_MS, so Temporal never times out an attempt whose request is still running.
   */
  readonly timeoutMs?: number;
  /** The webhook-id header when it is not `webhookId`: a redelivery sends its original's, so partners de-duplicate. */
  readonly webhookIdHeader?: string;
  /** An ordered webhook's key and sequence number, sent as `webhook-ordering-key` and `webhook-sequence`. */
  readonly ordering?: { readonly key: string; readonly sequence: number };
}

/** What one POST came to. Exactly one of httpStatus and errorClass is set. */
export interface AttemptOutcome {
  readonly attempt: number;
  /** ISO 8601 time the POST started. */
  readonly startedAt: string;
  readonly durationMs: number;
  readonly httpStatus: number | null;
  readonly errorClass: AttemptErrorClass | null;
  readonly errorMessage: string | null;
  /** The first 4 KiB of the response body (UTF-8), or null when there was no response. */
  readonly responseBody: string | null;
  readonly succeeded: boolean;
  /** The kinds of the event's signed links that were past their deadline when the POST was sent; absent: none. */
  readonly expiredLinks?: readonly SignedLinkKind[];
  /** A 429 or 503 answer's Retry-After, in ms from the answer, capped at an hour; absent: none sent. */
  readonly retryAfterMs?: number;
}

/** An outcome plus the time the attempt was due, so timer lateness is visible. */
export interface AttemptRecord extends AttemptOutcome {
  readonly scheduledAt: string;
  /** `manual` for an attempt an operator's retry-now started; absent (histories before it) means `schedule`. */
  readonly trigger?: AttemptTrigger;
}

/** Identifies the webhook row the record activities write. */
export interface WebhookRef {
  readonly webhookId: string;
  readonly eventId: string;
  readonly workflowId: string | null;
  readonly runId: string | null;
  readonly isTest: boolean;
}

/** One attempt, sent and recorded by the `deliverAttempt` local activity. */
export interface DeliverAttemptInput extends WebhookPostInput {
  /** The row's ids; the claim writes the row from them and the event when it does not exist yet. */
  readonly webhook: WebhookRef;
  /** ISO 8601 time the attempt was due. */
  readonly scheduledAt: string;
  /** The last attempt: a failure is then the final status, recorded with it. */
  readonly finalOnFailure: boolean;
  /** Absent means `schedule`. */
  readonly trigger?: AttemptTrigger;
  /** Held past PARTNER_HOLD_CEILING_MS already: the attempt goes whatever the partner gate says. */
  readonly pastHoldCeiling?: boolean;
  /**
   * An ordered webhook's key, on its first attempt until it has its turn: the attempt then asks its lane first
   * and comes back queued while an earlier webhook of the key is unsettled.
   */
  readonly orderingKey?: string;
  /** A recovery's redelivery with a place in its key's lane (DeliverWebhookInput's `inLane`), on every attempt. */
  readonly inLane?: true;
}

/** An ordered webhook's first attempt that an earlier webhook of its key is ahead of: nothing was claimed or sent. */
export interface QueuedAttempt {
  readonly queued: {
    readonly sequence: number;
    /** The nearest unsettled webhook ahead: it wakes this one when it settles. */
    readonly behind: { readonly webhookId: string; readonly sequence: number };
  };
}

/** Why an attempt was not made: the partner gate holds every delivery. */
export interface PartnerHold {
  readonly state: HoldState;
  /** An operator's reason for a pause. */
  readonly pauseReason: string | null;
  /** PARTNER_HOLD_CEILING_MS: past this much time held, the delivery goes on with its schedule. */
  readonly ceilingMs: number;
}

/** An attempt the gate held: nothing was claimed or sent, and the attempt keeps its number. */
export interface HeldAttempt {
  readonly held: PartnerHold;
}

/** What an attempt came to, and who still has to write it to PostgreSQL. */
export interface DeliveredAttempt {
  readonly outcome: AttemptOutcome;
  /**
   * True when the attempt could not write its record in time: the workflow then writes it through the retried
   * record activities, so a failed write never sends the POST again.
   */
  readonly needsRecord: boolean;
  /** An ordered webhook's sequence number in its key's lane, from the attempt that had its turn. */
  readonly sequence?: number;
  /**
   * The key its lane keeps, when it is not the workflow input's `orderingKey`: the event_id was accepted again
   * with another key, and every attempt sends the first acceptance's.
   */
  readonly laneKey?: string;
  /**
   * The last attempt of an ordered head failed with WEBHOOK_ORDERING_ON_FAILURE=block: nothing final was
   * recorded, and the key waits for an operator's skip or retry.
   */
  readonly blocked?: boolean;
}

/** An operator's decision for a blocked head: give it up (a gap) or make one more attempt now. */
export type BlockedDecision = 'skip' | 'retry';

export interface RecordAttemptInput {
  readonly webhook: WebhookRef;
  readonly attempt: AttemptRecord;
}

/** How a delivery ended; a cancelled one ends the workflow as cancelled rather than returning a summary. */
export type FinalStatus = 'delivered' | 'failed' | 'cancelled';

/** A row's final status: the workflow's, or `terminated` when the status URL finds the run terminated. */
export type StoppedStatus = FinalStatus | 'terminated';

export interface RecordOutcomeInput {
  readonly webhook: WebhookRef;
  readonly status: StoppedStatus;
  readonly finishedAt: string;
  /** An ordered webhook: its place in its key's lane settles with the outcome, and the next one is woken. */
  readonly ordered?: boolean;
}

export interface AttemptFailure {
  readonly errorClass: AttemptErrorClass;
  readonly errorMessage: string;
  /** ISO 8601; absent: now (the workflow's clock inside the workflow). */
  readonly startedAt?: string;
  /** Absent: 0, for an attempt that never sent anything. */
  readonly durationMs?: number;
}

/** The one constructor of an attempt that got no HTTP answer, for the workflow and the activities alike. */
export function failedAttempt(
  attempt: number,
  { errorClass, errorMessage, startedAt = new Date().toISOString(), durationMs = 0 }: AttemptFailure,
): AttemptOutcome {
  return {
    attempt,
    startedAt,
    durationMs,
    httpStatus: null,
    errorClass,
    errorMessage,
    responseBody: null,
    succeeded: false,
  };
}

/** The failure type of an attempt whose webhook an erasure removed: never sent, and not a lost record. */
export const ERASED_FAILURE_TYPE = 'WebhookErased';

/**
 * How long after an erasure a head cancelled with an attempt in flight settles without that attempt's record:
 * the longest an attempt runs (its POST's timeout, PARTNER_TIMEOUT_MS, and the margin its local activity has for
 * the claim and the record), so the next webhook of its key never overlaps it.
 */
export const erasedInFlightBoundMs = (partnerTimeoutMs = DEFAULT_SEND_TIMEOUT_MS) => partnerTimeoutMs + 15_000;
