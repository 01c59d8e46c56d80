import type { Knex } from 'knex';
import { prepared, raw, runSql, sql, type SqlFragment } from '../db/sql';
import type { PartnerState } from '../lib/vocabulary';
import type { AttemptOutcome, RecordAttemptInput, RecordOutcomeInput, StoppedStatus } from '../workflows/types';
import { GATE_STATE_SQL } from './partner-gate';
import {
  asAttemptOutcome,
  asStoredWebhook,
  ATTEMPT_COLUMNS,
  attemptRow,
  newWebhookRow,
  setRunIds,
  STORED_WEBHOOK_COLUMNS,
  WEBHOOK_VIEW_COLUMNS,
  type AttemptRow,
  type NewWebhook,
  type StoredWebhook,
  type StoredWebhookRow,
  type WebhookViewRow,
} from './webhook-rows';

export type { NewWebhook, StoredWebhook };

// One webhook's SQL: ingestion claims its row, the attempt's claim writes the row of a run started elsewhere,
// the attempt and record activities add its attempts and outcome, and the status URL reads them. Queries over
// many webhooks (the delivery log, bulk redelivery) are in webhook-log.ts; store/ is the only folder that
// touches webhook_events or webhook_attempts, always through db/sql statements and webhook-rows.ts's mapping.

/**
 * Writes the row of a new webhook before its only attempt (send-test); false when its event_id (or the webhook
 * id derived from it) is known. Ingestion writes its rows with claimEvent, the worker with claimAttempt.
 */
export async function insertWebhook(knex: Knex, webhook: NewWebhook): Promise<boolean> {
  const row = newWebhookRow(webhook, false);
  // No conflict target: webhook_id derives from event_id, so a concurrent twin can clash on either key.
  const inserted = await runSql(knex, sql`INSERT INTO webhook_events (${row.columns}) VALUES (${row.values}) ON CONFLICT DO NOTHING RETURNING id`);
  return inserted.length === 1;
}

const findStoredWebhook = async (knex: Knex, where: SqlFragment): Promise<StoredWebhook | undefined> => {
  const [row] = await runSql<StoredWebhookRow>(knex, sql`SELECT ${STORED_WEBHOOK_COLUMNS} FROM webhook_events WHERE ${where}`);
  return row && asStoredWebhook(row);
};

/** The original webhook of an event id (its redeliveries share the event id). */
export const findWebhookByEventId = (knex: Knex, eventId: string) => findStoredWebhook(knex, sql`event_id = ${eventId} AND redelivery_of IS NULL`);

export const findWebhookById = (knex: Knex, webhookId: string) => findStoredWebhook(knex, sql`id = ${webhookId}`);

/** Records the run of a webhook that had none; true when this call recorded it, false when one was there. */
export async function attachRun(knex: Knex, webhookId: string, runId: string): Promise<boolean> {
  const rows = await runSql(knex, sql`UPDATE webhook_events SET run_id = ${runId}, updated_at = now() WHERE id = ${webhookId} AND run_id IS NULL RETURNING id`);
  return rows.length === 1;
}

/**
 * Where an event stands before its start: reported (a call answered 202 with its run, so this one answers
 * 200 and starts nothing), to be started (this call's row, or one whose earlier start failed, is in doubt or
 * is under way: the stored event is what is delivered), or gone (a concurrent call's failed start removed the
 * row between our insert's conflict and our read).
 */
export type EventClaim =
  | { readonly kind: 'reported'; readonly webhook: StoredWebhook & { readonly runId: string } }
  | { readonly kind: 'start'; readonly webhook: StoredWebhook }
  | { readonly kind: 'gone' };

/**
 * Claims an event id for ingestion in one statement: writes its row, or reads the one an earlier call wrote.
 * A row a concurrent call committed after this statement began is not seen: `gone`, and the caller asks again.
 */
export async function claimEvent(knex: Knex, webhook: NewWebhook): Promise<EventClaim> {
  const row = newWebhookRow(webhook, false);
  const [found] = await runSql<StoredWebhookRow & { created: boolean }>(
    knex,
    prepared(
      'claim-event',
      sql`WITH created AS (
        INSERT INTO webhook_events (${row.columns}) VALUES (${row.values}) ON CONFLICT DO NOTHING RETURNING ${STORED_WEBHOOK_COLUMNS}
      )
      SELECT *, true AS created FROM created
      UNION ALL
      SELECT ${STORED_WEBHOOK_COLUMNS}, false AS created FROM webhook_events
       WHERE event_id = ${webhook.eventId} AND redelivery_of IS NULL AND NOT EXISTS (SELECT 1 FROM created)`,
    ),
  );
  if (!found) return { kind: 'gone' };
  const stored = asStoredWebhook(found);
  if (stored.startReported && stored.runId) return { kind: 'reported', webhook: { ...stored, runId: stored.runId } };
  return { kind: 'start', webhook: stored };
}

/**
 * The 202-or-200 rule, in one place: records the run a call started, and answers whether this call is the
 * first to report it, so exactly one call answers 202 for a webhook. The run id may be there already, written
 * by the worker's claim (eager start hands the first attempt to the worker before the start call returns) or
 * by the status URL.
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

/**
 * Removes the row of a webhook whose start failed for certain, unless a start was reported or anything was
 * recorded for it since (a run the worker found writes its row again in its claim).
 */
export async function forgetUnstartedWebhook(knex: Knex, webhookId: string): Promise<void> {
  await runSql(
    knex,
    sql`DELETE FROM webhook_events e WHERE e.id = ${webhookId} AND e.run_id IS NULL AND NOT e.start_reported AND e.claimed_attempt = 0
         AND NOT EXISTS (SELECT 1 FROM webhook_attempts a WHERE a.webhook_id = e.id)`,
  );
}

/** A record that reached PostgreSQL before the claim that writes its webhook's row: retried until it exists. */
export class WebhookRowMissingError extends Error {
  constructor(webhookId: string) {
    super(`the row of webhook ${webhookId} is not written yet`);
    this.name = 'WebhookRowMissingError';
  }
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
 * Every attempt's record, in one round trip: the row's ids (and, with `finish`, its final status), the attempt
 * inserted only when the row exists, and, with `feedback`, the gate fed with its outcome. Idempotent on
 * (webhook, attempt): a retried call after a lost reply finds the attempt and changes nothing. Data-modifying
 * CTEs all run, in one snapshot, atomically.
 */
export async function storeAttempt(knex: Knex, { webhook, attempt }: RecordAttemptInput, finish?: WebhookFinish, feedback?: GateFeedback): Promise<GateChange> {
  const finishing = finish ? sql`, status = ${finish.status}, finished_at = COALESCE(finished_at, ${finish.finishedAt}::timestamptz)` : raw('');
  const recorded = attemptRow(webhook, attempt);
  const [{ found, tripped, throttled_until }] = await runSql<{ found: number; tripped: boolean | null; throttled_until: Date | null }>(
    knex,
    prepared(
      finish ? 'record-attempt-and-finish' : 'record-attempt',
      sql`WITH row AS (
      UPDATE webhook_events SET ${setRunIds(webhook)}${finishing} WHERE id = ${webhook.webhookId} RETURNING id
    ), recorded AS (
      INSERT INTO webhook_attempts (webhook_id, ${recorded.columns})
      SELECT id, ${recorded.values} FROM row
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

/** A webhook's final status, when no attempt's record carried it. Idempotent: the first recorded finish time stays. */
export async function storeOutcome(knex: Knex, { webhook, status, finishedAt }: RecordOutcomeInput): Promise<void> {
  const rows = await runSql(
    knex,
    sql`UPDATE webhook_events SET ${setRunIds(webhook)}, status = ${status}, finished_at = COALESCE(finished_at, ${finishedAt}::timestamptz)
         WHERE id = ${webhook.webhookId} RETURNING id`,
  );
  if (rows.length === 0) throw new WebhookRowMissingError(webhook.webhookId);
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
export async function claimAttempt(knex: Knex, webhook: NewWebhook, attempt: number, gate: GateClaim): Promise<AttemptClaim> {
  const rate = sql`1.0 / COALESCE(g.max_per_second, ${gate.maxPerSecond}::int)`;
  // A run another Temporal client started has no row yet: the claim writes it, told of its start already.
  const row = newWebhookRow(webhook, true);
  const [claimed] = await runSql<ClaimRow>(
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
        INSERT INTO webhook_events AS e (${row.columns}, claimed_attempt, held_since, held_queue)
        SELECT ${row.values},
               CASE WHEN go THEN ${attempt}::smallint ELSE 0 END,
               CASE WHEN NOT open THEN date_trunc('milliseconds', clock_timestamp()) END,
               CASE WHEN NOT open THEN ${gate.taskQueue}::text END
          FROM go, open
        ON CONFLICT (id) DO UPDATE
           SET claimed_attempt = GREATEST(e.claimed_attempt, EXCLUDED.claimed_attempt), held_since = EXCLUDED.held_since,
               held_queue = COALESCE(EXCLUDED.held_queue, e.held_queue), ${setRunIds(webhook, 'e')}
         WHERE e.claimed_attempt < ${attempt} AND ((SELECT go FROM go) OR NOT (SELECT open FROM open))
        RETURNING accepted_at, claimed_attempt = ${attempt} AS claimed, held_since IS NOT NULL AS held
      )
      SELECT (SELECT accepted_at FROM claim WHERE claimed) AS accepted_at, (SELECT go FROM go) AS go,
             (SELECT (extract(epoch FROM send_at - clock_timestamp()) * 1000)::float8 FROM slot) AS send_in_ms,
             (SELECT state FROM gate) AS state, (SELECT pause_reason FROM gate) AS pause_reason,
             (SELECT CASE WHEN next_send_at > clock_timestamp() THEN (extract(epoch FROM next_send_at - clock_timestamp()) * 1000)::float8 END FROM gate)
               AS next_send_in_ms,
             EXISTS (SELECT 1 FROM claim WHERE held) AS held`,
    ),
  );
  if (claimed.accepted_at) return { kind: 'claimed', acceptedAt: claimed.accepted_at };
  if (claimed.held) return { kind: 'held', state: claimed.state as Exclude<PartnerState, 'active'>, pauseReason: claimed.pause_reason };
  if (claimed.state === null) throw new PartnerGateMissingError(gate.taskQueue);
  if (!claimed.go && (claimed.state === 'active' || gate.bypassHold)) {
    if (claimed.send_in_ms !== null) return { kind: 'slot', sendInMs: claimed.send_in_ms };
    if (!gate.slotReserved) return { kind: 'throttled', retryInMs: (claimed.next_send_in_ms ?? 0) - SEND_SLOT_HORIZON_MS };
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
  const [recorded] = await runSql<AttemptRow>(knex, sql`SELECT ${ATTEMPT_COLUMNS} FROM webhook_attempts WHERE webhook_id = ${webhookId} AND attempt = ${attempt}`);
  return recorded ? { kind: 'recorded', outcome: asAttemptOutcome(recorded) } : { kind: 'lost' };
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
): Promise<{ webhookId: string; workflowId: string; runId: string | null; startReported: boolean }> {
  const { webhookId, workflowId, originalId, key } = redelivery;
  const rows = await runSql<{ id: string }>(
    knex,
    sql`INSERT INTO webhook_events (id, event_id, event_type, action, company_id, body, accepted_at, workflow_id, redelivery_of, redelivery_key)
     SELECT ${webhookId}, event_id, event_type, action, company_id, body, accepted_at, ${workflowId}, id, ${key} FROM webhook_events WHERE id = ${originalId}
     ON CONFLICT (redelivery_of, redelivery_key) DO NOTHING RETURNING id`,
  );
  if (rows.length === 1) return { webhookId, workflowId, runId: null, startReported: false };
  const [existing] = await runSql<{ id: string; workflow_id: string; run_id: string | null; start_reported: boolean }>(
    knex,
    sql`SELECT id, workflow_id, run_id, start_reported FROM webhook_events WHERE redelivery_of = ${originalId} AND redelivery_key = ${key}`,
  );
  if (!existing) throw new WebhookRowMissingError(originalId);
  return { webhookId: existing.id, workflowId: existing.workflow_id, runId: existing.run_id, startReported: existing.start_reported };
}

/** One webhook as the status URL shows it: its row and every recorded attempt, in snake_case JSON. */
export async function loadWebhookView(knex: Knex, webhookId: string) {
  const [row] = await runSql<WebhookViewRow>(knex, sql`SELECT ${WEBHOOK_VIEW_COLUMNS} FROM webhook_events WHERE id = ${webhookId}`);
  if (!row) return undefined;
  const attempts = await runSql<AttemptRow>(knex, sql`SELECT ${ATTEMPT_COLUMNS} FROM webhook_attempts WHERE webhook_id = ${webhookId} ORDER BY attempt`);
  return { ...row, attempts };
}

export type WebhookView = WebhookViewRow & { readonly attempts: AttemptRow[] };
