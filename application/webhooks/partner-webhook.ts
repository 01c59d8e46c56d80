import type { Knex } from 'knex';
import type { DataAtRest } from '../../lib/at-rest';
import type { Config } from '../../lib/config';
import { FINISHED_STATUSES, type LogStatus } from '../../lib/vocabulary';
import { envelopeBody } from '../../events/envelope';
import { readGate, type GateView } from '../../store/partner/partner-gate';
import { loadDeliveryPosition } from '../../store/webhooks/partner-deliveries';
import { findWebhookById } from '../../store/webhooks/webhook-view';
import type { TemporalGateway } from '../../temporal/gateway';
import { webhookStatus } from './webhook-status';
import {
  explainDelivery,
  partnerErrorClass,
  type Explanation,
  type GateFacts,
  type PartnerErrorClass,
} from './delivery-explanation';

// One webhook as its partner sees it (GET /partner/v1/webhooks/{id} and …/body): the operator's status view
// (the row joined with Temporal's live state) in the partner's words, with why it is where it is. A webhook of a
// company the app is not granted is the same answer as none: undefined.

export interface PartnerAttempt {
  readonly number: number;
  readonly started_at: Date;
  readonly duration_ms: number;
  readonly http_status: number | null;
  /** Null when it succeeded; `http` when the endpoint answered otherwise (see partnerErrorClass). */
  readonly error_class: PartnerErrorClass | null;
  /** The start of the endpoint's answer; null without one, or once removed. */
  readonly response_excerpt: string | null;
}

export interface PartnerWebhookView {
  readonly id: string;
  readonly event_id: string;
  readonly event_type: string;
  readonly action: string;
  readonly company_id: string | null;
  readonly status: LogStatus;
  readonly ordering_key: string | null;
  readonly sequence: number | null;
  readonly accepted_at: Date;
  readonly finished_at: Date | null;
  readonly is_test: boolean;
  readonly redelivery_of: string | null;
  readonly payload_removed_at: Date | null;
  readonly attempts: PartnerAttempt[];
  readonly next_attempt_at: string | null;
  readonly explanation: Explanation;
}

/** The gate's columns the explanation reads, and the cap in force. */
export const gateFacts = (gate: GateView, config: Pick<Config, 'PARTNER_MAX_PER_SECOND'>): GateFacts => ({
  operatorPausedAt: gate.pausedAt,
  operatorPauseReason: gate.pauseReason,
  partnerPausedAt: gate.partnerPausedAt,
  partnerPauseReason: gate.partnerPauseReason,
  partnerPausedBy: gate.partnerPausedBy,
  trippedAt: gate.trippedAt,
  nextProbeAt: gate.nextProbeAt,
  retryAfterUntil: gate.retryAfterUntil,
  maxPerSecond: gate.maxPerSecond ?? config.PARTNER_MAX_PER_SECOND,
  slotsTakenAheadMs: gate.slotsTakenAheadMs,
});

const isFinished = (status: string): status is (typeof FINISHED_STATUSES)[number] =>
  (FINISHED_STATUSES as readonly string[]).includes(status);

/** The webhook `webhookId` of one of `companyIds`, with its attempts and explanation; undefined otherwise. */
export async function partnerWebhook(
  knex: Knex,
  atRest: DataAtRest,
  gateway: TemporalGateway,
  config: Pick<Config, 'PARTNER_MAX_PER_SECOND' | 'TEMPORAL_TASK_QUEUE'>,
  companyIds: readonly string[],
  webhookId: string,
  now = new Date(),
): Promise<PartnerWebhookView | undefined> {
  const position = await loadDeliveryPosition(knex, atRest, webhookId);
  if (!position?.companyId || !companyIds.includes(position.companyId)) return undefined;
  const view = await webhookStatus(knex, atRest, gateway, webhookId, now);
  if (!view) return undefined;
  const gate = await readGate(knex, config.TEMPORAL_TASK_QUEUE);
  const rowStatus = view.status === 'not_started' ? 'pending' : view.status;
  const nextAttemptAt = view.live?.source === 'temporal' ? view.live.next_attempt_at : null;
  const explanation = explainDelivery(
    {
      status: rowStatus,
      statusReason: view.status_reason,
      payloadRemovedAt: view.payload_removed_at,
      payloadRemovedReason: view.payload_removed_reason,
      finishedAt: view.finished_at,
      held: view.held_since !== null,
      claimedAttempt: position.claimedAttempt,
      attempts: view.attempts,
      nextAttemptAt: nextAttemptAt ? new Date(nextAttemptAt) : null,
      queuedBehind: rowStatus === 'pending' ? position.queuedBehind : null,
      gate: gateFacts(gate, config),
    },
    now,
  );
  return {
    id: view.webhook_id,
    event_id: view.event_id,
    event_type: view.event_type,
    action: view.action,
    company_id: view.company_id,
    // The status Temporal's answer may just have recorded wins over the one read before it.
    status: isFinished(rowStatus) ? rowStatus : position.logStatus,
    ordering_key: position.orderingKey,
    sequence: position.sequence,
    accepted_at: view.accepted_at,
    finished_at: view.finished_at,
    is_test: view.is_test,
    redelivery_of: view.redelivery_of,
    payload_removed_at: view.payload_removed_at,
    attempts: view.attempts.map((attempt) => ({
      number: attempt.attempt,
      started_at: attempt.started_at,
      duration_ms: attempt.duration_ms,
      http_status: attempt.http_status,
      error_class: partnerErrorClass(attempt),
      response_excerpt: attempt.response_body,
    })),
    next_attempt_at: nextAttemptAt,
    explanation,
  };
}

/** A webhook's body as the partner may read it back. */
export type PartnerBody =
  | { readonly kind: 'body'; readonly text: string }
  | { readonly kind: 'removed'; readonly reason: 'retention' | 'erasure'; readonly at: Date | null };

/**
 * The exact bytes every attempt of the webhook sends (events/envelope.ts envelopeBody over the stored event, opened
 * when sealed), or when and why they were removed; undefined as partnerWebhook.
 */
export async function partnerWebhookBody(
  knex: Knex,
  atRest: DataAtRest,
  companyIds: readonly string[],
  webhookId: string,
): Promise<PartnerBody | undefined> {
  const position = await loadDeliveryPosition(knex, atRest, webhookId);
  if (!position?.companyId || !companyIds.includes(position.companyId)) return undefined;
  const stored = await findWebhookById(knex, atRest, webhookId);
  if (!stored) return undefined;
  if (stored.event === null)
    return { kind: 'removed', reason: stored.payloadRemovedReason ?? 'retention', at: stored.payloadRemovedAt };
  return { kind: 'body', text: envelopeBody(stored.event) };
}
