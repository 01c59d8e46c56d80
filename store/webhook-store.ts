import type { Knex } from 'knex';
import { prepared, raw, runSql, sql } from '../db/sql';
import { companyIdOf } from '../events/company-id';
import { envelopeBody, type WebhookEnvelope } from '../events/envelope';
import type { AttemptOutcome, RecordAttemptInput, RecordOutcomeInput, StoppedStatus, WebhookRef } from '../workflows/types';

// One webhook's SQL: ingestion claims its row, the attempt and record activities add its attempts and outcome,
// and the status URL reads them. Queries over many webhooks (the delivery log, bulk redelivery) are in
// webhook-log.ts; store/ is the only folder that touches webhook_events or webhook_attempts.

/** A webhook's row as ingestion and the record activities write it. */
type NewWebhook = WebhookRef & { readonly event: WebhookEnvelope };

/** The webhook_events row: the event's columns, the exact body every attempt sends, its Temporal ids. */
function webhookEventRow(webhook: NewWebhook) {
  return {
    id: webhook.webhookId,
    event_id: webhook.eventId,
    event_type: webhook.event.event_type,
    action: webhook.event.action,
    company_id: companyIdOf(webhook.event) ?? null,
    body: envelopeBody(webhook.event),
    workflow_id: webhook.workflowId,
    run_id: webhook.runId,
    is_test: webhook.isTest,
  };
}

/**
 * The row a worker writes for a workflow another Temporal client started (`startWebhook`): that client was told
 * of the start, so no call of the API may answer 202 for it.
 */
const rowStartedElsewhere = (webhook: NewWebhook) => ({ ...webhookEventRow(webhook), start_reported: true });

/** Claims the row of a new webhook; false when its event_id (or the webhook id derived from it) is known. */
export async function insertWebhook(knex: Knex, webhook: NewWebhook): Promise<boolean> {
  const row = webhookEventRow(webhook);
  const inserted = await runSql(
    knex,
    // No conflict target: webhook_id derives from event_id, so a concurrent twin can clash on either key.
    prepared(
      'insert-webhook',
      sql`INSERT INTO webhook_events (id, event_id, event_type, action, company_id, body, workflow_id, run_id, is_test)
          VALUES (${row.id}, ${row.event_id}, ${row.event_type}, ${row.action}, ${row.company_id}, ${row.body}, ${row.workflow_id}, ${row.run_id}, ${row.is_test})
          ON CONFLICT DO NOTHING RETURNING id`,
    ),
  );
  return inserted.length === 1;
}

/** A known webhook: its ids, its run once one is known, and the event exactly as it was first stored. */
export interface StoredWebhook {
  readonly webhookId: string;
  readonly eventId: string;
  readonly workflowId: string;
  readonly runId: string | null;
  /** A call has answered 202 for it, with its run: a later call answers 200 without asking Temporal. */
  readonly startReported: boolean;
  readonly event: WebhookEnvelope;
  /** When the service accepted the event; its signed links expire a fixed time after (events/signed-links.ts). */
  readonly acceptedAt: Date;
}

const storedWebhook = (knex: Knex) => knex('webhook_events').select('id', 'event_id', 'workflow_id', 'run_id', 'start_reported', 'body', 'accepted_at');

// `body` is a json column: its text, and so its key order, is what the first request stored.
const asStoredWebhook = (
  row: { id: string; event_id: string; workflow_id: string; run_id: string | null; start_reported: boolean; body: WebhookEnvelope; accepted_at: Date } | undefined,
) =>
  row && {
    webhookId: row.id,
    eventId: row.event_id,
    workflowId: row.workflow_id,
    runId: row.run_id,
    startReported: row.start_reported,
    event: row.body,
    acceptedAt: row.accepted_at,
  };

/** The original webhook of an event id (its redeliveries share the event id). */
export async function findWebhookByEventId(knex: Knex, eventId: string): Promise<StoredWebhook | undefined> {
  return asStoredWebhook(await storedWebhook(knex).where({ event_id: eventId }).whereNull('redelivery_of').first());
}

export async function findWebhookById(knex: Knex, webhookId: string): Promise<StoredWebhook | undefined> {
  return asStoredWebhook(await storedWebhook(knex).where({ id: webhookId }).first());
}

/** Records the run of a webhook that had none; true when this call recorded it, false when one was there. */
export async function attachRun(knex: Knex, webhookId: string, runId: string): Promise<boolean> {
  const updated = await knex('webhook_events').where({ id: webhookId }).whereNull('run_id').update({ run_id: runId, updated_at: knex.fn.now() });
  return updated === 1;
}

/**
 * Records the run a call started and whether that call is the first to report it, so exactly one call answers
 * 202 for a webhook: the run id may be there already, written by the worker's claim (eager start hands the
 * first attempt to the worker before the start call returns) or by the status URL.
 */
export async function reportStart(knex: Knex, webhookId: string, runId: string): Promise<boolean> {
  const rows = await runSql(
    knex,
    prepared(
      'report-start',
      sql`UPDATE webhook_events SET run_id = COALESCE(run_id, ${runId}), start_reported = true, updated_at = now()
           WHERE id = ${webhookId} AND NOT start_reported RETURNING id`,
    ),
  );
  return rows.length === 1;
}

/** Removes the row of a webhook whose start failed for certain, unless anything was recorded for it since. */
export async function forgetUnstartedWebhook(knex: Knex, webhookId: string): Promise<void> {
  await knex('webhook_events')
    .where({ id: webhookId })
    .whereNull('run_id')
    .whereNotExists(knex('webhook_attempts').where({ webhook_id: webhookId }))
    .del();
}

/** A record that reached PostgreSQL before the record that writes its webhook's row: retried until it exists. */
export class WebhookRowMissingError extends Error {
  constructor(webhookId: string) {
    super(`the row of webhook ${webhookId} is not written yet`);
    this.name = 'WebhookRowMissingError';
  }
}

/** The workflow and run ids of a record, kept where the row has them already: for knex's builder chains. */
function runIds(knex: Knex, webhook: WebhookRef) {
  return {
    workflow_id: knex.raw('COALESCE(webhook_events.workflow_id, ?)', [webhook.workflowId]),
    run_id: knex.raw('COALESCE(webhook_events.run_id, ?)', [webhook.runId]),
    updated_at: knex.fn.now(),
  };
}

/** The same as a SET list, for the prepared statements every delivery runs. */
const setRunIds = (webhook: WebhookRef) =>
  sql`workflow_id = COALESCE(workflow_id, ${webhook.workflowId}), run_id = COALESCE(run_id, ${webhook.runId}), updated_at = now()`;

/**
 * Makes sure the webhook's row exists and carries the workflow and run ids. A record that carries the event
 * creates a missing row (a workflow started by `startWebhook`); one without it only updates.
 */
async function ensureWebhookRow(trx: Knex.Transaction, webhook: WebhookRef): Promise<void> {
  const ids = runIds(trx, webhook);
  if (webhook.event) {
    await trx('webhook_events').insert(rowStartedElsewhere({ ...webhook, event: webhook.event })).onConflict('id').merge(ids);
    return;
  }
  const updated = await trx('webhook_events').where({ id: webhook.webhookId }).update(ids);
  if (updated === 0) throw new WebhookRowMissingError(webhook.webhookId);
}

/** How a webhook ended, when an attempt's record also finishes it. */
export interface WebhookFinish {
  readonly status: StoppedStatus;
  readonly finishedAt: string;
}

/**
 * Idempotent on (webhook, attempt): a retried call after a lost reply finds the row and changes nothing. With
 * `finish`, the final status is written with it, atomically. A record without the event (the row exists, as
 * the API wrote it) is one statement; one that may have to create the row is a transaction.
 */
export async function storeAttempt(knex: Knex, record: RecordAttemptInput, finish?: WebhookFinish): Promise<void> {
  if (!record.webhook.event) return storeAttemptOfStoredRow(knex, record, finish);
  const { webhook, attempt } = record;
  await knex.transaction(async (trx) => {
    await ensureWebhookRow(trx, webhook);
    await trx('webhook_attempts')
      .insert({
        webhook_id: webhook.webhookId,
        attempt: attempt.attempt,
        scheduled_at: attempt.scheduledAt,
        started_at: attempt.startedAt,
        duration_ms: attempt.durationMs,
        http_status: attempt.httpStatus,
        error_class: attempt.errorClass,
        error_message: attempt.errorMessage,
        response_body: attempt.responseBody,
        succeeded: attempt.succeeded,
        trigger: attempt.trigger ?? 'schedule',
        expired_links: attempt.expiredLinks ?? [],
        is_test: webhook.isTest,
      })
      .onConflict(['webhook_id', 'attempt'])
      .ignore();
    if (finish) await finishWebhook(trx, webhook.webhookId, finish);
  });
}

/**
 * Every delivery's record, in one round trip: the row's ids (and final status), and the attempt inserted only
 * when the row exists. Data-modifying CTEs all run, in one snapshot, atomically.
 */
async function storeAttemptOfStoredRow(knex: Knex, { webhook, attempt }: RecordAttemptInput, finish?: WebhookFinish): Promise<void> {
  const finishing = finish ? sql`, status = ${finish.status}, finished_at = COALESCE(finished_at, ${finish.finishedAt}::timestamptz)` : raw('');
  const [{ found }] = await runSql<{ found: number }>(
    knex,
    prepared(
      finish ? 'record-attempt-and-finish' : 'record-attempt',
      sql`WITH row AS (
      UPDATE webhook_events
         SET ${setRunIds(webhook)}${finishing}
       WHERE id = ${webhook.webhookId}
      RETURNING id
    ), recorded AS (
      INSERT INTO webhook_attempts (webhook_id, attempt, scheduled_at, started_at, duration_ms, http_status, error_class, error_message,
                                    response_body, succeeded, trigger, expired_links, is_test)
      SELECT id, ${attempt.attempt}::smallint, ${attempt.scheduledAt}::timestamptz, ${attempt.startedAt}::timestamptz, ${attempt.durationMs}::integer,
             ${attempt.httpStatus}::smallint, ${attempt.errorClass}::text, ${attempt.errorMessage}::text, ${attempt.responseBody}::text,
             ${attempt.succeeded}::boolean, ${attempt.trigger ?? 'schedule'}::text, ${attempt.expiredLinks ?? []}::text[], ${webhook.isTest}::boolean
        FROM row
      ON CONFLICT (webhook_id, attempt) DO NOTHING
    )
    SELECT count(*)::int AS found FROM row`,
    ),
  );
  if (found === 0) throw new WebhookRowMissingError(webhook.webhookId);
}

/** Idempotent: the first recorded finish time stays. */
export async function storeOutcome(knex: Knex, { webhook, status, finishedAt }: RecordOutcomeInput): Promise<void> {
  await knex.transaction(async (trx) => {
    await ensureWebhookRow(trx, webhook);
    await finishWebhook(trx, webhook.webhookId, { status, finishedAt });
  });
}

async function finishWebhook(trx: Knex.Transaction, webhookId: string, { status, finishedAt }: WebhookFinish): Promise<void> {
  await trx('webhook_events')
    .where({ id: webhookId })
    .update({ status, finished_at: trx.raw('COALESCE(finished_at, ?)', [finishedAt]), updated_at: trx.fn.now() });
}

/**
 * An attempt that may be POSTed now (with the event's acceptance time, which dates its signed links), one that
 * was recorded already, or one an earlier try claimed and lost.
 */
export type AttemptClaim = { readonly kind: 'claimed'; readonly acceptedAt: Date } | { readonly kind: 'recorded'; readonly outcome: AttemptOutcome } | { readonly kind: 'lost' };

/**
 * Claims attempt `attempt` before its POST, creating the row when the webhook carries its event. Only the
 * first try of an attempt gets the claim: a later one (after a lost worker or a timed-out try) finds the
 * recorded outcome, or else treats the attempt as lost, since its POST may have reached the partner.
 */
export async function claimAttempt(knex: Knex, webhook: WebhookRef, attempt: number): Promise<AttemptClaim> {
  const claimed: { accepted_at: Date }[] = webhook.event
    ? await knex('webhook_events')
        .insert({ ...rowStartedElsewhere({ ...webhook, event: webhook.event }), claimed_attempt: attempt })
        .onConflict('id')
        .merge({ claimed_attempt: attempt, ...runIds(knex, webhook) })
        .where('webhook_events.claimed_attempt', '<', attempt)
        .returning('accepted_at')
    : await runSql(
        knex,
        prepared(
          'claim-attempt',
          sql`UPDATE webhook_events
                 SET claimed_attempt = ${attempt}, ${setRunIds(webhook)}
               WHERE id = ${webhook.webhookId} AND claimed_attempt < ${attempt}
              RETURNING accepted_at`,
        ),
      );
  if (claimed.length === 1) return { kind: 'claimed', acceptedAt: claimed[0].accepted_at };
  const row = await knex('webhook_events').select('id').where({ id: webhook.webhookId }).first();
  if (!row) throw new WebhookRowMissingError(webhook.webhookId);
  const recorded = await knex('webhook_attempts').where({ webhook_id: webhook.webhookId, attempt }).first();
  if (!recorded) return { kind: 'lost' };
  return {
    kind: 'recorded',
    outcome: {
      attempt,
      startedAt: recorded.started_at.toISOString(),
      durationMs: recorded.duration_ms,
      httpStatus: recorded.http_status,
      errorClass: recorded.error_class,
      errorMessage: recorded.error_message,
      responseBody: recorded.response_body,
      succeeded: recorded.succeeded,
      ...(recorded.expired_links.length && { expiredLinks: recorded.expired_links }),
    },
  };
}

/** A redelivery's row: the original's event, byte for byte, under a new id and workflow. */
export interface NewRedelivery {
  readonly webhookId: string;
  readonly workflowId: string;
  /** The first webhook of the event: every redelivery points at it, never at another redelivery. */
  readonly originalId: string;
  /** At most one redelivery per original and key: a repeated bulk redelivery finds the one it made. */
  readonly key: string;
}

/** The redelivery of `originalId` under `key`: the one this call wrote, or the one an earlier call did. */
export async function insertRedelivery(
  knex: Knex,
  redelivery: NewRedelivery,
): Promise<{ webhookId: string; workflowId: string; runId: string | null; startReported: boolean; created: boolean }> {
  const { webhookId, workflowId, originalId, key } = redelivery;
  const rows = await runSql<{ id: string }>(
    knex,
    sql`INSERT INTO webhook_events (id, event_id, event_type, action, company_id, body, accepted_at, workflow_id, redelivery_of, redelivery_key)
     SELECT ${webhookId}, event_id, event_type, action, company_id, body, accepted_at, ${workflowId}, id, ${key} FROM webhook_events WHERE id = ${originalId}
     ON CONFLICT (redelivery_of, redelivery_key) DO NOTHING RETURNING id`,
  );
  if (rows.length === 1) return { webhookId, workflowId, runId: null, startReported: false, created: true };
  const existing = await knex('webhook_events')
    .select('id', 'workflow_id', 'run_id', 'start_reported')
    .where({ redelivery_of: originalId, redelivery_key: key })
    .first();
  if (!existing) throw new WebhookRowMissingError(originalId);
  return { webhookId: existing.id, workflowId: existing.workflow_id, runId: existing.run_id, startReported: existing.start_reported, created: false };
}

/** One webhook as the status URL shows it: its row and every recorded attempt, in snake_case JSON. */
export async function loadWebhookView(knex: Knex, webhookId: string) {
  const row = await knex('webhook_events')
    .select(
      'id',
      'event_id',
      'event_type',
      'action',
      'company_id',
      'workflow_id',
      'run_id',
      'status',
      'redelivery_of',
      'is_test',
      'accepted_at',
      'created_at',
      'updated_at',
      'finished_at',
      'body as event',
    )
    .where({ id: webhookId })
    .first();
  if (!row) return undefined;
  const attempts = await knex('webhook_attempts')
    .select('attempt', 'trigger', 'scheduled_at', 'started_at', 'duration_ms', 'http_status', 'error_class', 'error_message', 'response_body', 'succeeded', 'expired_links', 'recorded_at')
    .where({ webhook_id: webhookId })
    .orderBy('attempt');
  const { id, ...rest } = row;
  return { webhook_id: id as string, ...rest, attempts };
}

export type WebhookView = NonNullable<Awaited<ReturnType<typeof loadWebhookView>>>;
