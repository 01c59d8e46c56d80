import { joinSql, raw, sql, type SqlFragment } from '../../db/sql';
import { companyIdOf } from '../../events/company-id';
import { envelopeBody, type WebhookEnvelope } from '../../events/envelope';
import { bodyBinding, excerptBinding, openText, sealText, storedBodyBinding, type DataAtRest } from '../../lib/at-rest';
import { eventSubjectKeys, type SubjectIndexKey } from '../../lib/subject-index';
import type { EventAction, EventType, SignedLinkKind, WebhookStatus } from '../../lib/vocabulary';
import type { AttemptOutcome, AttemptRecord, WebhookRef } from '../../lib/delivery';

// The one mapping between the webhook tables' columns and the service's objects: every statement of store/ on
// one webhook writes and reads rows through it.

/** A record that reached PostgreSQL before the claim that writes its webhook's row: retried until it exists. */
export class WebhookRowMissingError extends Error {
  constructor(webhookId: string) {
    super(`the row of webhook ${webhookId} is not written yet`);
    this.name = 'WebhookRowMissingError';
  }
}

/**
 * A webhook's row before it is written: its ids, its event, the original it redelivers, and its ordering key
 * (an ordered webhook is placed in its key's lane by the statement that writes its row).
 */
export type NewWebhook = WebhookRef & {
  readonly event: WebhookEnvelope;
  readonly redeliveryOf?: string;
  readonly orderingKey?: string;
};

/**
 * The columns a new webhook_events row is written with, and their values: the event's columns, the exact body
 * every attempt sends (sealed when keys are set), the subject index's keys under `indexKey` (and its id), its
 * Temporal ids. `startReported`:
 * no call of the API may answer 202 for it (a worker writes the row of a run another Temporal client started,
 * and that client was told of the start).
 */
export function newWebhookRow(
  webhook: NewWebhook,
  startReported: boolean,
  atRest: DataAtRest,
  indexKey: SubjectIndexKey,
): { columns: SqlFragment; values: SqlFragment } {
  const body = sealText(atRest, envelopeBody(webhook.event), bodyBinding(webhook.webhookId));
  const values: Record<string, SqlFragment> = {
    id: sql`${webhook.webhookId}::uuid`,
    event_id: sql`${webhook.eventId}::text`,
    event_type: sql`${webhook.event.event_type}::text`,
    action: sql`${webhook.event.action}::text`,
    company_id: sql`${companyIdOf(webhook.event) ?? null}::text`,
    body: sql`${body.clear}::json`,
    body_sealed: sql`${body.sealed}::bytea`,
    body_key_id: sql`${body.keyId}::text`,
    subject_keys: sql`${eventSubjectKeys(indexKey.key, webhook.event)}::text[]`,
    subject_key_id: sql`${indexKey.id}::text`,
    workflow_id: sql`${webhook.workflowId}::text`,
    run_id: sql`${webhook.runId}::text`,
    is_test: sql`${webhook.isTest}::boolean`,
    start_reported: sql`${startReported}::boolean`,
    // The API writes a redelivery's row under its caller's key; a row the worker writes again has its own.
    redelivery_of: sql`${webhook.redeliveryOf ?? null}::uuid`,
    redelivery_key: sql`${webhook.redeliveryOf ? `run:${webhook.workflowId}` : null}::text`,
  };
  return { columns: raw(Object.keys(values).join(', ')), values: joinSql(Object.values(values), ', ') };
}

/**
 * The body's columns as a row holds them: in clear (`body`, a json column) or sealed; all null once removed.
 * `redelivery_of` names, for a body sealed in format v2 only, the webhook it is bound to (lib/at-rest.ts,
 * storedBodyBinding).
 */
export const BODY_COLUMNS = raw('body, body_sealed, body_key_id, redelivery_of');

export interface BodyColumns {
  body: WebhookEnvelope | null;
  body_sealed: Buffer | null;
  body_key_id: string | null;
  redelivery_of: string | null;
}

/**
 * The event a row holds, null once its body was removed. A json column's text, and so its key order, is what
 * the first request stored; a sealed body is that same text.
 */
export function openBody(atRest: DataAtRest, webhookId: string, row: BodyColumns): WebhookEnvelope | null {
  if (row.body_sealed === null) return row.body;
  return JSON.parse(
    openText(
      atRest,
      { clear: null, sealed: row.body_sealed, keyId: row.body_key_id },
      storedBodyBinding(webhookId, row.redelivery_of, row.body_key_id),
    )!,
  ) as WebhookEnvelope;
}

/** A known webhook: its ids, its run once one is known, and the event exactly as it was first stored. */
export interface StoredWebhook {
  readonly webhookId: string;
  readonly eventId: string;
  readonly workflowId: string;
  readonly runId: string | null;
  /** A call has answered 202 for it, with its run: a later call answers 200 without asking Temporal. */
  readonly startReported: boolean;
  /** Null once the retention purge or an erasure removed the body (`payloadRemovedAt`). */
  readonly event: WebhookEnvelope | null;
  readonly payloadRemovedAt: Date | null;
  readonly payloadRemovedReason: 'retention' | 'erasure' | null;
  /** When the service accepted the event; its signed links expire a fixed time after (events/signed-links.ts). */
  readonly acceptedAt: Date;
}

export const STORED_WEBHOOK_COLUMNS = raw(
  `id, event_id, workflow_id, run_id, start_reported, ${BODY_COLUMNS.sql}, payload_removed_at, ` +
    `payload_removed_reason, accepted_at`,
);

export interface StoredWebhookRow extends BodyColumns {
  id: string;
  event_id: string;
  workflow_id: string;
  run_id: string | null;
  start_reported: boolean;
  payload_removed_at: Date | null;
  payload_removed_reason: 'retention' | 'erasure' | null;
  accepted_at: Date;
}

export const asStoredWebhook = (row: StoredWebhookRow, atRest: DataAtRest): StoredWebhook => ({
  webhookId: row.id,
  eventId: row.event_id,
  workflowId: row.workflow_id,
  runId: row.run_id,
  startReported: row.start_reported,
  event: openBody(atRest, row.id, row),
  payloadRemovedAt: row.payload_removed_at,
  payloadRemovedReason: row.payload_removed_reason,
  acceptedAt: row.accepted_at,
});

/**
 * The webhook_attempts columns of one recorded attempt, and their values, for an INSERT … SELECT; with
 * `excerptIf`, the response excerpt only where that condition of the SELECT holds (a row whose payload an
 * erasure removed keeps none).
 */
export function attemptRow(
  webhook: WebhookRef,
  attempt: AttemptRecord,
  atRest: DataAtRest,
  excerptIf?: SqlFragment,
): { columns: SqlFragment; values: SqlFragment } {
  const excerpt = sealText(atRest, attempt.responseBody, excerptBinding(webhook.webhookId, attempt.attempt));
  const kept = (value: SqlFragment) => (excerptIf ? sql`CASE WHEN ${excerptIf} THEN ${value} END` : value);
  const values: Record<string, SqlFragment> = {
    attempt: sql`${attempt.attempt}::smallint`,
    scheduled_at: sql`${attempt.scheduledAt}::timestamptz`,
    started_at: sql`${attempt.startedAt}::timestamptz`,
    duration_ms: sql`${attempt.durationMs}::integer`,
    http_status: sql`${attempt.httpStatus}::smallint`,
    error_class: sql`${attempt.errorClass}::text`,
    error_message: sql`${attempt.errorMessage}::text`,
    response_body: kept(sql`${excerpt.clear}::text`),
    response_body_sealed: kept(sql`${excerpt.sealed}::bytea`),
    response_body_key_id: kept(sql`${excerpt.keyId}::text`),
    succeeded: sql`${attempt.succeeded}::boolean`,
    trigger: sql`${attempt.trigger ?? 'schedule'}::text`,
    expired_links: sql`${attempt.expiredLinks ?? []}::text[]`,
    is_test: sql`${webhook.isTest}::boolean`,
  };
  return { columns: raw(Object.keys(values).join(', ')), values: joinSql(Object.values(values), ', ') };
}

/** The columns of an attempt as its outcome, and as the status URL shows it (snake_case JSON) once opened. */
export const ATTEMPT_COLUMNS = raw(
  'attempt, trigger, scheduled_at, started_at, duration_ms, http_status, error_class, error_message, ' +
    'response_body, response_body_sealed, response_body_key_id, succeeded, expired_links, recorded_at',
);

/** An attempt as the status URL shows it: its excerpt in clear, whichever way it rests. */
export interface AttemptView {
  attempt: number;
  trigger: string;
  scheduled_at: Date;
  started_at: Date;
  duration_ms: number;
  http_status: number | null;
  error_class: AttemptOutcome['errorClass'];
  error_message: string | null;
  response_body: string | null;
  succeeded: boolean;
  expired_links: SignedLinkKind[];
  recorded_at: Date;
}

export interface AttemptRow extends AttemptView {
  response_body_sealed: Buffer | null;
  response_body_key_id: string | null;
}

export function openAttempt(
  atRest: DataAtRest,
  webhookId: string,
  { response_body_sealed: sealed, response_body_key_id: keyId, ...attempt }: AttemptRow,
): AttemptView {
  return {
    ...attempt,
    response_body: openText(
      atRest,
      { clear: attempt.response_body, sealed, keyId },
      excerptBinding(webhookId, attempt.attempt),
    ),
  };
}

export const asAttemptOutcome = (row: AttemptView): AttemptOutcome => ({
  attempt: row.attempt,
  startedAt: row.started_at.toISOString(),
  durationMs: row.duration_ms,
  httpStatus: row.http_status,
  errorClass: row.error_class,
  errorMessage: row.error_message,
  responseBody: row.response_body,
  succeeded: row.succeeded,
  ...(row.expired_links.length && { expiredLinks: row.expired_links }),
});

/** The columns of a webhook as the status URL shows it, with its attempts beside. */
export const WEBHOOK_VIEW_COLUMNS = raw(
  `id AS webhook_id, event_id, event_type, action, company_id, workflow_id, run_id, status, status_reason,
    redelivery_of, is_test,
   accepted_at, created_at, updated_at, finished_at, held_since, payload_removed_at, payload_removed_reason, body,
     body_sealed, body_key_id`,
);

/** A webhook as the status URL shows it, its body opened: `event` is null once the body was removed. */
export interface WebhookViewFields {
  webhook_id: string;
  event_id: string;
  event_type: EventType;
  action: EventAction;
  company_id: string | null;
  workflow_id: string | null;
  run_id: string | null;
  status: WebhookStatus;
  redelivery_of: string | null;
  is_test: boolean;
  accepted_at: Date;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
  held_since: Date | null;
  /** `erasure`: an erasure cancelled this delivery. */
  status_reason: 'erasure' | null;
  payload_removed_at: Date | null;
  payload_removed_reason: 'retention' | 'erasure' | null;
  event: WebhookEnvelope | null;
}

export type WebhookViewRow = Omit<WebhookViewFields, 'event'> & Omit<BodyColumns, 'redelivery_of'>;

export function openWebhookView(
  atRest: DataAtRest,
  { body, body_sealed, body_key_id, ...view }: WebhookViewRow,
): WebhookViewFields {
  return {
    ...view,
    event: openBody(atRest, view.webhook_id, { body, body_sealed, body_key_id, redelivery_of: view.redelivery_of }),
  };
}

/** The SET list that gives a row its workflow and run ids, where it has none yet. */
export const setRunIds = (webhook: Pick<WebhookRef, 'workflowId' | 'runId'>, table = 'webhook_events') =>
  sql`workflow_id = COALESCE(${raw(table)}.workflow_id, ${webhook.workflowId}),
    run_id = COALESCE(${raw(table)}.run_id, ${webhook.runId}), updated_at = now()`;
