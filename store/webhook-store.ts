import type { Knex } from 'knex';
import { prepared, raw, runSql, sql, type SqlFragment } from '../db/sql';
import { companyIdOf } from '../events/company-id';
import { envelopeBody, type WebhookEnvelope } from '../events/envelope';
import type { PartnerState } from '../lib/vocabulary';
import type { AttemptOutcome, RecordAttemptInput, RecordOutcomeInput, StoppedStatus, WebhookRef } from '../workflows/types';
import { GATE_STATE_SQL } from './partner-gate';

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
 * What a POST's outcome tells the partner gate: `failing` (no answer, a timeout, 5XX or 429) counts toward the
 * breaker, `answered` (any other answer, a 4XX for one payload included) resets the count. Only the attempt's
 * own record carries it, so a retried record never counts twice.
 */
export interface GateFeedback {
  readonly taskQueue: string;
  readonly verdict: 'failing' | 'answered';
  /** A Retry-After the partner sent with a 429 or 503, already capped. */
  readonly retryAfterSeconds: number | null;
  /** PARTNER_BREAKER_FAILURES: this many failing answers in a row trip the breaker. */
  readonly breakerFailures: number;
  /** PARTNER_PROBE_INTERVAL_MS: when the first probe of a trip is due. */
  readonly probeIntervalMs: number;
}

/** The state changes an attempt's record made to the gate, for their one log line each. */
export interface GateChange {
  readonly tripped: boolean;
  /** Set when this record began a Retry-After hold (not when it only moved one in force). */
  readonly throttledUntil: Date | null;
}

const NO_GATE_CHANGE: GateChange = { tripped: false, throttledUntil: null };

/**
 * The gate's update for one recorded outcome, as a statement's CTE or alone. It writes nothing for a success
 * while nothing failed before, so a healthy partner's records never touch the gate row.
 */
function feedGate(feedback: GateFeedback | undefined, recordedNow: SqlFragment): SqlFragment {
  const verdict = feedback?.verdict ?? null;
  const failing = sql`${verdict}::text = 'failing'`;
  const retryAfter = sql`${feedback?.retryAfterSeconds ?? null}::float8`;
  const trips = sql`(tripped_at IS NULL AND ${failing} AND consecutive_failures + 1 >= ${feedback?.breakerFailures ?? 0}::int)`;
  return sql`UPDATE partner_gate SET
         consecutive_failures = CASE WHEN ${failing} THEN consecutive_failures + 1 ELSE 0 END,
         tripped_at = CASE WHEN ${trips} THEN now() ELSE tripped_at END,
         trips = trips + CASE WHEN ${trips} THEN 1 ELSE 0 END,
         probe_due_at = CASE WHEN ${trips} THEN now() + make_interval(secs => ${(feedback?.probeIntervalMs ?? 0) / 1000}::float8) ELSE probe_due_at END,
         throttled_since = CASE WHEN ${retryAfter} IS NOT NULL AND (retry_after_until IS NULL OR retry_after_until <= now()) THEN now() ELSE throttled_since END,
         retry_after_until = CASE WHEN ${retryAfter} IS NULL THEN retry_after_until
                                  ELSE GREATEST(retry_after_until, now() + make_interval(secs => ${retryAfter})) END,
         updated_at = now()
       WHERE task_queue = ${feedback?.taskQueue ?? null} AND ${verdict}::text IS NOT NULL AND ${recordedNow}
         AND (${failing} OR consecutive_failures > 0 OR ${retryAfter} IS NOT NULL)
      RETURNING tripped_at = now() AS tripped, CASE WHEN throttled_since = now() THEN retry_after_until END AS throttled_until`;
}

const gateChange = (row: { tripped: boolean | null; throttled_until: Date | null } | undefined): GateChange =>
  row ? { tripped: row.tripped === true, throttledUntil: row.throttled_until } : NO_GATE_CHANGE;

/**
 * Idempotent on (webhook, attempt): a retried call after a lost reply finds the row and changes nothing. With
 * `finish`, the final status is written with it, atomically; with `feedback`, the gate learns the outcome in
 * the same statement. A record without the event (the row exists, as the API wrote it) is one statement; one
 * that may have to create the row is a transaction.
 */
export async function storeAttempt(knex: Knex, record: RecordAttemptInput, finish?: WebhookFinish, feedback?: GateFeedback): Promise<GateChange> {
  if (!record.webhook.event) return storeAttemptOfStoredRow(knex, record, finish, feedback);
  const { webhook, attempt } = record;
  return knex.transaction(async (trx) => {
    await ensureWebhookRow(trx, webhook);
    const inserted = await trx('webhook_attempts')
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
      .ignore()
      .returning('webhook_id');
    if (finish) await finishWebhook(trx, webhook.webhookId, finish);
    if (!feedback || inserted.length === 0) return NO_GATE_CHANGE;
    const [row] = await trx.raw(...asKnexRaw(feedGate(feedback, raw('true')))).then((result: { rows: { tripped: boolean; throttled_until: Date | null }[] }) => result.rows);
    return gateChange(row);
  });
}

/** A statement of the `sql` template as knex.raw's arguments, for a transaction's connection. */
const asKnexRaw = (statement: SqlFragment): [string, Knex.RawBinding[]] => [statement.sql, statement.bindings as Knex.RawBinding[]];

/**
 * Every delivery's record, in one round trip: the row's ids (and final status), the attempt inserted only
 * when the row exists, and the gate fed with its outcome. Data-modifying CTEs all run, in one snapshot, atomically.
 */
async function storeAttemptOfStoredRow(knex: Knex, { webhook, attempt }: RecordAttemptInput, finish?: WebhookFinish, feedback?: GateFeedback): Promise<GateChange> {
  const finishing = finish ? sql`, status = ${finish.status}, finished_at = COALESCE(finished_at, ${finish.finishedAt}::timestamptz)` : raw('');
  const [{ found, tripped, throttled_until }] = await runSql<{ found: number; tripped: boolean | null; throttled_until: Date | null }>(
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
      RETURNING webhook_id
    ), fed AS (
      ${feedGate(feedback, raw('EXISTS (SELECT 1 FROM recorded)'))}
    )
    SELECT count(*)::int AS found, (SELECT tripped FROM fed) AS tripped, (SELECT throttled_until FROM fed) AS throttled_until FROM row`,
    ),
  );
  if (found === 0) throw new WebhookRowMissingError(webhook.webhookId);
  return gateChange({ tripped, throttled_until });
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
 * was recorded already, or one an earlier try claimed and lost; or, before any claim: held by the partner gate,
 * given a send slot in the near future, or throttled (no slot within the horizon).
 */
export type AttemptClaim =
  | { readonly kind: 'claimed'; readonly acceptedAt: Date }
  | { readonly kind: 'recorded'; readonly outcome: AttemptOutcome }
  | { readonly kind: 'lost' }
  | { readonly kind: 'held'; readonly state: Exclude<PartnerState, 'active'>; readonly pauseReason: string | null }
  | { readonly kind: 'slot'; readonly sendInMs: number }
  | { readonly kind: 'throttled'; readonly retryInMs: number };

/** What the partner gate needs of a claim. */
export interface GateClaim {
  readonly taskQueue: string;
  /** This worker's PARTNER_MAX_PER_SECOND: the cap unless an operator set one at run time. */
  readonly maxPerSecond: number;
  /** The delivery was held past the ceiling: it is sent whatever the gate's state, still within the cap. */
  readonly bypassHold: boolean;
  /** An earlier claim of this try reserved the send slot, which has come: claim without taking another. */
  readonly slotReserved: boolean;
}

/**
 * Send slots are handed out at most this far ahead: a claim beyond it waits and asks again, so a pause stops
 * every POST within this time, and a waiting attempt never holds a slot longer than this.
 */
export const SEND_SLOT_HORIZON_MS = 1000;

/**
 * Claims attempt `attempt` before its POST, creating the row when the webhook carries its event. One statement
 * reads the partner gate, takes the deployment's next send slot (GCRA: slots 1/cap apart, so no second sees
 * more than the cap plus one) and claims the attempt, or marks the delivery held. Only the first try of an
 * attempt gets the claim: a later one (after a lost worker or a timed-out try) finds the recorded outcome, or
 * else treats the attempt as lost, since its POST may have reached the partner.
 */
export async function claimAttempt(knex: Knex, webhook: WebhookRef, attempt: number, gate: GateClaim): Promise<AttemptClaim> {
  if (webhook.event) {
    await knex('webhook_events').insert(rowStartedElsewhere({ ...webhook, event: webhook.event })).onConflict('id').ignore();
  }
  const rate = sql`1.0 / COALESCE(g.max_per_second, ${gate.maxPerSecond}::int)`;
  const [row] = await runSql<ClaimRow>(
    knex,
    prepared(
      'claim-attempt',
      sql`WITH gate AS (
        SELECT ${raw(GATE_STATE_SQL)} AS state, pause_reason, next_send_at FROM partner_gate WHERE task_queue = ${gate.taskQueue}
      ), open AS (
        SELECT ${gate.bypassHold}::boolean OR NOT EXISTS (SELECT 1 FROM gate WHERE state <> 'active') AS open
      ), slot AS (
        UPDATE partner_gate g SET next_send_at = GREATEST(g.next_send_at, clock_timestamp()) + make_interval(secs => ${rate})
         WHERE g.task_queue = ${gate.taskQueue} AND NOT ${gate.slotReserved}::boolean AND (SELECT open FROM open)
           AND g.next_send_at < clock_timestamp() + make_interval(secs => ${SEND_SLOT_HORIZON_MS / 1000}::float8)
        RETURNING g.next_send_at - make_interval(secs => ${rate}) AS send_at
      ), go AS (
        SELECT (SELECT open FROM open)
           AND (${gate.slotReserved}::boolean OR EXISTS (SELECT 1 FROM slot WHERE send_at <= clock_timestamp() + interval '1 millisecond')) AS go
      ), claim AS (
        UPDATE webhook_events SET claimed_attempt = ${attempt}, held_since = NULL, ${setRunIds(webhook)}
         WHERE id = ${webhook.webhookId} AND claimed_attempt < ${attempt} AND (SELECT go FROM go)
        RETURNING accepted_at
      ), held AS (
        UPDATE webhook_events SET held_since = date_trunc('milliseconds', clock_timestamp()), held_queue = ${gate.taskQueue}, ${setRunIds(webhook)}
         WHERE id = ${webhook.webhookId} AND claimed_attempt < ${attempt} AND NOT (SELECT open FROM open)
        RETURNING id
      )
      SELECT (SELECT accepted_at FROM claim) AS accepted_at, (SELECT go FROM go) AS go,
             (SELECT (extract(epoch FROM send_at - clock_timestamp()) * 1000)::float8 FROM slot) AS send_in_ms,
             (SELECT state FROM gate) AS state, (SELECT pause_reason FROM gate) AS pause_reason,
             (SELECT CASE WHEN next_send_at > clock_timestamp() THEN (extract(epoch FROM next_send_at - clock_timestamp()) * 1000)::float8 END FROM gate)
               AS next_send_in_ms,
             EXISTS (SELECT 1 FROM held) AS held`,
    ),
  );
  if (row.accepted_at) return { kind: 'claimed', acceptedAt: row.accepted_at };
  if (row.held) return { kind: 'held', state: row.state as Exclude<PartnerState, 'active'>, pauseReason: row.pause_reason };
  if (row.state === null) throw new PartnerGateMissingError(gate.taskQueue);
  if (!row.go && (row.state === 'active' || gate.bypassHold)) {
    if (row.send_in_ms !== null) return { kind: 'slot', sendInMs: row.send_in_ms };
    if (!gate.slotReserved) return { kind: 'throttled', retryInMs: (row.next_send_in_ms ?? 0) - SEND_SLOT_HORIZON_MS };
  }
  return earlierClaim(knex, webhook.webhookId, attempt);
}

interface ClaimRow {
  accepted_at: Date | null;
  go: boolean;
  send_in_ms: number | null;
  state: PartnerState | null;
  pause_reason: string | null;
  next_send_in_ms: number | null;
  held: boolean;
}

/** The queue has no gate row yet: the worker creates it (ensureGate) and claims again. */
export class PartnerGateMissingError extends Error {
  constructor(taskQueue: string) {
    super(`the partner gate of task queue ${taskQueue} is not created yet`);
    this.name = 'PartnerGateMissingError';
  }
}

/** An attempt claimed before this try: its recorded outcome, or lost (its POST may have reached the partner). */
async function earlierClaim(knex: Knex, webhookId: string, attempt: number): Promise<AttemptClaim> {
  const row = await knex('webhook_events').select('id').where({ id: webhookId }).first();
  if (!row) throw new WebhookRowMissingError(webhookId);
  const recorded = await knex('webhook_attempts').where({ webhook_id: webhookId, attempt }).first();
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
      'held_since',
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
