import type { AttemptErrorClass, WebhookStatus } from '../../lib/vocabulary';

// Why a webhook is where it is, in the partner's words (GET /partner/v1/webhooks/{id}, docs/partners.md,
// "Explanation codes"): one pure rule over what the row, its attempts, its lane and the partner gate hold.
//
// Precedence, first that applies:
// 1. `erased`: an erasure cancelled the delivery or removed its body (it outranks whatever the delivery came to).
// 2. `payload_removed`: the retention purge removed the body of a finished delivery (the text says how it ended).
// 3. A finished delivery: `delivered`, `failed`, `cancelled` (a run terminated in Temporal counts as cancelled).
// 4. Pending, `queued_behind`: an earlier webhook of its ordering key is unsettled (named); no attempt goes first.
// 5. Pending and held by the gate (its claim found the gate closed), or not yet attempted while the gate is
//    closed: the gate's hold, in lib/partner-states.ts HOLD_PRECEDENCE with the pause split by who paused:
//    `paused_by_operator` (an operator's pause outlives a partner's resume), `paused_by_partner`, `breaker_open`,
//    `retry_after` (the partner's own 429/503 Retry-After).
// 6. Pending, its last attempt failed and the next is due: `retry_scheduled` (what it got, when the next goes).
// 7. Pending, its claimed attempt has no record yet: `sending` (the POST is under way).
// 8. Otherwise pending: `rate_capped`, waiting for its send slot within the deployment's cap (or, released from
//    a hold, for the recovery to wake it at the cap).

export const EXPLANATION_CODES = [
  'delivered',
  'retry_scheduled',
  'paused_by_partner',
  'paused_by_operator',
  'breaker_open',
  'retry_after',
  'rate_capped',
  'queued_behind',
  'sending',
  'failed',
  'cancelled',
  'payload_removed',
  'erased',
] as const;
export type ExplanationCode = (typeof EXPLANATION_CODES)[number];

export interface Explanation {
  readonly code: ExplanationCode;
  readonly text: string;
}

/** An attempt's error class in the partner's words: `connect` for a refused connection, `http` for an answer. */
export const PARTNER_ERROR_CLASSES = ['dns', 'connect', 'tls', 'timeout', 'reset', 'other', 'http'] as const;
export type PartnerErrorClass = (typeof PARTNER_ERROR_CLASSES)[number];

const STORED_TO_PARTNER: Record<AttemptErrorClass, PartnerErrorClass> = {
  dns: 'dns',
  connection_refused: 'connect',
  tls: 'tls',
  timeout: 'timeout',
  reset: 'reset',
  other: 'other',
};

/** A failed attempt's class: the stored class mapped, `http` for an answer that was not a success; null if it was. */
export function partnerErrorClass(attempt: {
  readonly succeeded: boolean;
  readonly http_status: number | null;
  readonly error_class: AttemptErrorClass | null;
}): PartnerErrorClass | null {
  if (attempt.succeeded) return null;
  if (attempt.error_class) return STORED_TO_PARTNER[attempt.error_class];
  return 'http';
}

/** What the rule reads of one attempt. */
export interface ExplainedAttempt {
  readonly attempt: number;
  readonly started_at: Date;
  readonly succeeded: boolean;
  readonly http_status: number | null;
  readonly error_class: AttemptErrorClass | null;
}

/** The partner gate's columns, as the rule reads them (store/partner/partner-gate.ts). */
export interface GateFacts {
  readonly operatorPausedAt: Date | null;
  readonly operatorPauseReason: string | null;
  readonly partnerPausedAt: Date | null;
  readonly partnerPauseReason: string | null;
  readonly partnerPausedBy: string | null;
  readonly trippedAt: Date | null;
  readonly nextProbeAt: Date | null;
  readonly retryAfterUntil: Date | null;
  /** The deployment's cap now (an operator's run-time cap, else PARTNER_MAX_PER_SECOND). */
  readonly maxPerSecond: number;
  readonly slotsTakenAheadMs: number;
}

/** Everything the rule reads of one webhook. */
export interface DeliveryFacts {
  readonly status: WebhookStatus;
  /** `erasure`: an erasure cancelled it. */
  readonly statusReason: 'erasure' | null;
  readonly payloadRemovedAt: Date | null;
  readonly payloadRemovedReason: 'retention' | 'erasure' | null;
  readonly finishedAt: Date | null;
  /** Its claim found the gate closed, and no recovery has woken it since. */
  readonly held: boolean;
  /** The attempt number its last claim took (0: none yet). */
  readonly claimedAttempt: number;
  /** Recorded attempts, in order. */
  readonly attempts: readonly ExplainedAttempt[];
  /** When Temporal's run says the next attempt goes; null when none is scheduled or Temporal did not answer. */
  readonly nextAttemptAt: Date | null;
  /** The nearest earlier unsettled webhook of its ordering key, when there is one. */
  readonly queuedBehind: { readonly webhookId: string; readonly sequence: number } | null;
  readonly gate: GateFacts;
}

const iso = (date: Date) => date.toISOString();
const capitalised = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

/** What one attempt got, in words: "HTTP 503" or "a connect error". */
export function attemptResult(attempt: ExplainedAttempt): string {
  if (attempt.http_status !== null) return `HTTP ${attempt.http_status}`;
  return `a ${partnerErrorClass(attempt)} error`;
}

const lastAttemptWords = (facts: DeliveryFacts): string => {
  const last = facts.attempts.at(-1);
  return last ? `attempt ${last.attempt} (${iso(last.started_at)}) got ${attemptResult(last)}` : 'no attempt was made';
};

const HELD = 'It is held, no attempt spent,';

/** The gate's hold in force now, by precedence, as a code and its text; undefined while nothing holds. */
function gateHold(gate: GateFacts, now: Date): Explanation | undefined {
  if (gate.operatorPausedAt)
    return {
      code: 'paused_by_operator',
      text:
        `The service's operator paused deliveries at ${iso(gate.operatorPausedAt)} ` +
        `(reason: ${gate.operatorPauseReason}). ${HELD} until the operator resumes.`,
    };
  if (gate.partnerPausedAt)
    return {
      code: 'paused_by_partner',
      text:
        `Your app ${gate.partnerPausedBy} paused deliveries at ${iso(gate.partnerPausedAt)} ` +
        `(reason: ${gate.partnerPauseReason}). ${HELD} until you resume.`,
    };
  if (gate.trippedAt) {
    const probe = gate.nextProbeAt ? ` (next at ${iso(gate.nextProbeAt)})` : '';
    return {
      code: 'breaker_open',
      text:
        `The breaker opened at ${iso(gate.trippedAt)} after your endpoint failed repeatedly. ` +
        `${HELD} until a probe${probe} gets an answer.`,
    };
  }
  if (gate.retryAfterUntil && gate.retryAfterUntil > now)
    return {
      code: 'retry_after',
      text: `Your endpoint answered with Retry-After: deliveries wait until ${iso(gate.retryAfterUntil)}. ${HELD}.`,
    };
  return undefined;
}

function finished(facts: DeliveryFacts): Explanation | undefined {
  const last = lastAttemptWords(facts);
  switch (facts.status) {
    case 'delivered':
      return { code: 'delivered', text: `Delivered: ${last}.` };
    case 'failed':
      return {
        code: 'failed',
        text:
          `Failed after ${facts.attempts.length} attempt(s); ${last}. ` +
          'Nothing more is sent unless it is redelivered.',
      };
    case 'cancelled':
    case 'terminated':
      return { code: 'cancelled', text: `Cancelled by the service's operator; ${last}.` };
    default:
      return undefined;
  }
}

function erased(facts: DeliveryFacts): Explanation {
  const at = facts.payloadRemovedAt ? ` at ${iso(facts.payloadRemovedAt)}` : '';
  const cancelled = facts.statusReason === 'erasure' ? ' and cancelled its delivery' : '';
  return { code: 'erased', text: `An erasure of the person it concerns removed its body${at}${cancelled}.` };
}

/** Why a pending webhook that nothing queues or holds waits: its retry, its POST under way, or its send slot. */
function pending(facts: DeliveryFacts, hold: Explanation | undefined): Explanation {
  const lastAttempt = facts.attempts.at(-1);
  const inFlight = facts.claimedAttempt > 0 && (lastAttempt?.attempt ?? 0) < facts.claimedAttempt;
  const waiting = !facts.held && !inFlight && lastAttempt !== undefined && !lastAttempt.succeeded;
  if (hold && (facts.held || (!waiting && !inFlight))) return hold;
  if (waiting) {
    const next = facts.nextAttemptAt
      ? `the next attempt is at ${iso(facts.nextAttemptAt)}`
      : 'the next follows the retry schedule';
    const held = hold ? ` When it comes, ${hold.code} holds it.` : '';
    return { code: 'retry_scheduled', text: `${capitalised(lastAttemptWords(facts))}; ${next}.${held}` };
  }
  if (inFlight) return { code: 'sending', text: `Attempt ${facts.claimedAttempt} is being sent to your endpoint now.` };
  const taken = facts.gate.slotsTakenAheadMs;
  return {
    code: 'rate_capped',
    text:
      `Waiting for a send slot: deliveries go out at most ${facts.gate.maxPerSecond} per second` +
      (taken > 0 ? `, and the slots of the next ${Math.ceil(taken)} ms are taken.` : '.'),
  };
}

/** Why the webhook is where it is, at `now`. */
export function explainDelivery(facts: DeliveryFacts, now: Date): Explanation {
  if (facts.statusReason === 'erasure' || facts.payloadRemovedReason === 'erasure') return erased(facts);
  const ended = finished(facts);
  if (facts.payloadRemovedReason === 'retention') {
    const removed = `Retention removed its body at ${iso(facts.payloadRemovedAt!)}.`;
    return { code: 'payload_removed', text: ended ? `${ended.text} ${removed}` : removed };
  }
  if (ended) return ended;
  if (facts.queuedBehind) {
    const { webhookId, sequence } = facts.queuedBehind;
    return {
      code: 'queued_behind',
      text:
        `Queued behind webhook ${webhookId} (sequence ${sequence}) of the same ordering key: ` +
        'it goes once that one is settled.',
    };
  }
  return pending(facts, gateHold(facts.gate, now));
}
