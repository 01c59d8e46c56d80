import type { Knex } from 'knex';
import { prepared, raw, runSql, sql, type SqlFragment } from '../../db/sql';
import { HOLD_PRECEDENCE, type HoldState, type PartnerAnswer, type PartnerState } from '../../lib/partner-states';

// Every statement on the partner gate (db/migrations/014_partner_gate.ts): one row per delivery task queue,
// whose states and transitions lib/partner-states.ts defines. The attempt's claim and record compose their
// gate parts from here (claimGateCtes, feedGate) into their own one statement; the operator's controls and the
// partner recovery call the rest. The row is created in one way: ensureGate, called only from store/.

/** Each hold's SQL: when it is in force, and since when. */
const HOLDS: Record<HoldState, { inForce: string; since: string }> = {
  paused: { inForce: 'paused_at IS NOT NULL', since: 'paused_at' },
  tripped: { inForce: 'tripped_at IS NOT NULL', since: 'tripped_at' },
  throttled: { inForce: 'retry_after_until > clock_timestamp()', since: 'throttled_since' },
};

/** The state a gate row is in: the first hold of HOLD_PRECEDENCE in force, else active. */
const GATE_STATE_SQL = `CASE ${HOLD_PRECEDENCE.map((state) => `WHEN ${HOLDS[state].inForce} THEN '${state}'`).join(' ')}
  ELSE 'active' END`;

/** When the hold in force (the row's `state`) began; null while active. */
const HOLD_SINCE_SQL = `CASE state
  ${HOLD_PRECEDENCE.map((state) => `WHEN '${state}' THEN ${HOLDS[state].since}`).join(' ')} END`;

/**
 * Creates the gate of a task queue, open, when it has none: the one way a gate row is written first. Every
 * function here that needs the row calls it before its statement; the claim, the hot path, calls it only when
 * its statement found no row (store/webhooks/attempt-claim.ts).
 */
export async function ensureGate(knex: Knex, taskQueue: string): Promise<void> {
  await runSql(knex, sql`INSERT INTO partner_gate (task_queue) VALUES (${taskQueue}) ON CONFLICT DO NOTHING`);
}

// The state as it is read, and an operator's transitions (pause, resume) and cap.

/** The gate as an operator reads it, with the count of held deliveries. */
export interface GateView {
  readonly state: PartnerState;
  readonly pauseReason: string | null;
  /** Who paused, from the columns: the operator's pause and the partner's own (migration 028) are apart. */
  readonly pausedAt: Date | null;
  readonly partnerPausedAt: Date | null;
  readonly partnerPauseReason: string | null;
  readonly partnerPausedBy: string | null;
  /** When the hold in force began (pause, trip or Retry-After); null while active. */
  readonly since: Date | null;
  readonly held: number;
  /** Set by an operator at run time; null: each worker's PARTNER_MAX_PER_SECOND. */
  readonly maxPerSecond: number | null;
  readonly consecutiveFailures: number;
  readonly trips: number;
  readonly trippedAt: Date | null;
  readonly nextProbeAt: Date | null;
  readonly retryAfterUntil: Date | null;
  /** How far ahead of now the send slots are taken (0 when the next slot is free now). */
  readonly slotsTakenAheadMs: number;
}

interface GateRow {
  state: PartnerState;
  pause_reason: string | null;
  paused_at: Date | null;
  partner_paused_at: Date | null;
  partner_pause_reason: string | null;
  partner_paused_by: string | null;
  since: Date | null;
  held: number;
  max_per_second: number | null;
  consecutive_failures: number;
  trips: string;
  tripped_at: Date | null;
  probe_due_at: Date | null;
  retry_after_until: Date | null;
  slots_taken_ahead_ms: number;
}

/** The gate's state and counts, for the operator's status, the metrics and the partner recovery. */
export async function readGate(knex: Knex, taskQueue: string): Promise<GateView> {
  await ensureGate(knex, taskQueue);
  const [row] = await runSql<GateRow>(
    knex,
    prepared(
      'read-partner-gate',
      sql`SELECT state, pause_reason, paused_at, partner_paused_at, partner_pause_reason, partner_paused_by,
                 max_per_second, consecutive_failures, trips, tripped_at, probe_due_at,
                 retry_after_until, ${raw(HOLD_SINCE_SQL)} AS since,
                 (CASE WHEN next_send_at > clock_timestamp()
                       THEN extract(epoch FROM next_send_at - clock_timestamp()) * 1000
                       ELSE 0 END)::float8 AS slots_taken_ahead_ms,
                 (SELECT count(*)::int FROM webhook_events
                   WHERE held_since IS NOT NULL AND held_queue = ${taskQueue} AND status = 'pending') AS held
            FROM (SELECT *, ${raw(GATE_STATE_SQL)} AS state FROM partner_gate WHERE task_queue = ${taskQueue}) gate`,
    ),
  );
  return {
    state: row.state,
    pauseReason: row.pause_reason,
    pausedAt: row.paused_at,
    partnerPausedAt: row.partner_paused_at,
    partnerPauseReason: row.partner_pause_reason,
    partnerPausedBy: row.partner_paused_by,
    since: row.since,
    held: row.held,
    maxPerSecond: row.max_per_second,
    consecutiveFailures: row.consecutive_failures,
    trips: Number(row.trips),
    trippedAt: row.tripped_at,
    nextProbeAt: row.tripped_at ? row.probe_due_at : null,
    retryAfterUntil: row.retry_after_until,
    slotsTakenAheadMs: row.slots_taken_ahead_ms,
  };
}

/** Pauses delivery; true when this call paused it (a second pause keeps the first one's time and reason). */
export async function pauseGate(knex: Knex, taskQueue: string, reason: string): Promise<boolean> {
  await ensureGate(knex, taskQueue);
  const rows = await runSql(
    knex,
    sql`UPDATE partner_gate SET paused_at = now(), pause_reason = ${reason}, updated_at = now()
         WHERE task_queue = ${taskQueue} AND paused_at IS NULL RETURNING task_queue`,
  );
  return rows.length === 1;
}

/** Ends an operator's pause; true when one was in force. */
export async function resumeGate(knex: Knex, taskQueue: string): Promise<boolean> {
  await ensureGate(knex, taskQueue);
  const rows = await runSql(
    knex,
    sql`UPDATE partner_gate SET paused_at = NULL, pause_reason = NULL, updated_at = now()
         WHERE task_queue = ${taskQueue} AND paused_at IS NOT NULL RETURNING task_queue`,
  );
  return rows.length === 1;
}

/** Sets the cap of every worker of the queue at run time; null: back to each worker's PARTNER_MAX_PER_SECOND. */
export async function limitGate(knex: Knex, taskQueue: string, maxPerSecond: number | null): Promise<void> {
  await ensureGate(knex, taskQueue);
  await runSql(
    knex,
    sql`UPDATE partner_gate SET max_per_second = ${maxPerSecond}, updated_at = now() WHERE task_queue = ${taskQueue}`,
  );
}

// The partner recovery: its lease, the probe of a tripped breaker and its close, the release of held deliveries.

/**
 * Makes `owner` the queue's one partner recovery loop (the columns keep their first name, `guard_*`) for
 * `leaseMs`: true while it holds the lease. A loop that stops answering loses it when the lease runs out, and
 * another worker's takes over.
 */
export async function takeRecoveryLease(
  knex: Knex,
  taskQueue: string,
  owner: string,
  leaseMs: number,
): Promise<boolean> {
  await ensureGate(knex, taskQueue);
  const rows = await runSql(
    knex,
    prepared(
      'take-recovery-lease',
      sql`UPDATE partner_gate
             SET guard_owner = ${owner},
                 guard_lease_until = clock_timestamp() + make_interval(secs => ${leaseMs / 1000})
           WHERE task_queue = ${taskQueue}
             AND (guard_owner = ${owner} OR guard_lease_until IS NULL OR guard_lease_until < clock_timestamp())
          RETURNING task_queue`,
    ),
  );
  return rows.length === 1;
}

/** Lets another worker's recovery loop take over at once (a worker that stops). */
export async function releaseRecoveryLease(knex: Knex, taskQueue: string, owner: string): Promise<void> {
  await runSql(
    knex,
    sql`UPDATE partner_gate SET guard_lease_until = NULL WHERE task_queue = ${taskQueue} AND guard_owner = ${owner}`,
  );
}

/**
 * Takes the tripped breaker's next probe when it is due: only one caller gets it, and the next is `intervalMs`
 * later.
 */
export async function claimProbe(knex: Knex, taskQueue: string, intervalMs: number): Promise<boolean> {
  const rows = await runSql(
    knex,
    sql`UPDATE partner_gate SET probe_due_at = clock_timestamp() + make_interval(secs => ${intervalMs / 1000})
         WHERE task_queue = ${taskQueue} AND tripped_at IS NOT NULL AND probe_due_at <= clock_timestamp()
        RETURNING task_queue`,
  );
  return rows.length === 1;
}

/** Closes the tripped breaker after a probe the partner answered; true when this call closed it. */
export async function closeBreaker(knex: Knex, taskQueue: string): Promise<boolean> {
  const rows = await runSql(
    knex,
    sql`UPDATE partner_gate SET tripped_at = NULL, probe_due_at = NULL, consecutive_failures = 0, updated_at = now()
         WHERE task_queue = ${taskQueue} AND tripped_at IS NOT NULL RETURNING task_queue`,
  );
  return rows.length === 1;
}

/** A held delivery, as the partner recovery wakes it. */
export interface HeldDelivery {
  readonly webhookId: string;
  readonly workflowId: string;
  readonly heldSince: Date;
}

/** The oldest held deliveries of the queue (by acceptance), at most `limit`. */
export async function oldestHeld(knex: Knex, taskQueue: string, limit: number): Promise<HeldDelivery[]> {
  const rows = await runSql<{ id: string; workflow_id: string; held_since: Date }>(
    knex,
    prepared(
      'oldest-held',
      sql`SELECT id, workflow_id, held_since FROM webhook_events
           WHERE held_since IS NOT NULL AND held_queue = ${taskQueue} AND status = 'pending' AND workflow_id IS NOT NULL
           ORDER BY accepted_at, id LIMIT ${limit}`,
    ),
  );
  return rows.map((row) => ({ webhookId: row.id, workflowId: row.workflow_id, heldSince: row.held_since }));
}

/**
 * Marks a woken delivery as no longer held, unless it was held again since (its claim found the gate closed
 * once more and wrote a new `held_since`).
 */
export async function markReleased(knex: Knex, held: HeldDelivery): Promise<void> {
  // held_since is written to the millisecond (the claim truncates it), so a Date compares exactly.
  await runSql(
    knex,
    sql`UPDATE webhook_events SET held_since = NULL
         WHERE id = ${held.webhookId} AND held_since = ${held.heldSince.toISOString()}::timestamptz`,
  );
}

// The attempt's record: an answer's transitions (trip, throttle, the breaker's count).

/**
 * What one POST's outcome tells the gate (its answer, lib/partner-states.ts), and the settings it is judged
 * by. Only the attempt's own record carries it, so a retried record never counts twice.
 */
export interface GateFeedback {
  readonly taskQueue: string;
  readonly answer: PartnerAnswer;
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

/** What feedGate's CTE returns, read by the record's statement. */
export interface FedGateRow {
  tripped: boolean | null;
  throttled_until: Date | null;
}

/**
 * The transitions an answer makes (trip, throttle, and the breaker's count), as a CTE of the attempt's record
 * (store/webhooks/attempt-record.ts), fed only when `recordedNow`. It writes nothing for a success while nothing failed
 * before, so a healthy partner's records never touch the gate row.
 */
export function feedGate(feedback: GateFeedback | undefined, recordedNow: SqlFragment): SqlFragment {
  const answer = feedback?.answer ?? null;
  const failing = sql`${answer}::text = 'failing'`;
  const retryAfter = sql`${feedback?.retryAfterSeconds ?? null}::float8`;
  const breakerFailures = feedback?.breakerFailures ?? 0;
  const probeIntervalSeconds = (feedback?.probeIntervalMs ?? 0) / 1000;
  const trips = sql`(tripped_at IS NULL AND ${failing} AND consecutive_failures + 1 >= ${breakerFailures}::int)`;
  return sql`UPDATE partner_gate SET
         consecutive_failures = CASE WHEN ${failing} THEN consecutive_failures + 1 ELSE 0 END,
         tripped_at = CASE WHEN ${trips} THEN now() ELSE tripped_at END,
         trips = trips + CASE WHEN ${trips} THEN 1 ELSE 0 END,
         probe_due_at = CASE WHEN ${trips} THEN now() + make_interval(secs => ${probeIntervalSeconds}::float8)
                             ELSE probe_due_at END,
         throttled_since = CASE WHEN ${retryAfter} IS NOT NULL
                                AND (retry_after_until IS NULL OR retry_after_until <= now())
                                THEN now() ELSE throttled_since END,
         retry_after_until = CASE WHEN ${retryAfter} IS NULL THEN retry_after_until
                                  ELSE GREATEST(retry_after_until, now() + make_interval(secs => ${retryAfter})) END,
         updated_at = now()
       WHERE task_queue = ${feedback?.taskQueue ?? null} AND ${answer}::text IS NOT NULL AND ${recordedNow}
         AND (${failing} OR consecutive_failures > 0 OR ${retryAfter} IS NOT NULL)
      RETURNING tripped_at = now() AS tripped,
                CASE WHEN throttled_since = now() THEN retry_after_until END AS throttled_until`;
}

export const gateChange = ({ tripped, throttled_until }: FedGateRow): GateChange => ({
  tripped: tripped === true,
  throttledUntil: throttled_until,
});

// The attempt's claim: whether the gate holds the delivery, and its send slot within the cap.

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
 * The claim's gate and slot, as the first CTEs of its statement: `gate` (the state), `open` (nothing holds the
 * delivery), `slot` (the deployment's next send slot, GCRA: slots 1/cap apart, so no second sees more than the
 * cap plus one) and `may_send` (the attempt may be claimed and POSTed now).
 */
export function claimGateCtes(gate: GateClaim): SqlFragment {
  const rate = sql`1.0 / COALESCE(g.max_per_second, ${gate.maxPerSecond}::int)`;
  return sql`gate AS (
        SELECT ${raw(GATE_STATE_SQL)} AS state, pause_reason, next_send_at
          FROM partner_gate WHERE task_queue = ${gate.taskQueue}
      ), open AS (
        SELECT ${gate.bypassHold}::boolean OR NOT EXISTS (SELECT 1 FROM gate WHERE state <> 'active') AS open
      ), slot AS (
        UPDATE partner_gate g
           SET next_send_at = GREATEST(g.next_send_at, clock_timestamp()) + make_interval(secs => ${rate})
         WHERE g.task_queue = ${gate.taskQueue} AND NOT ${gate.slotReserved}::boolean AND (SELECT open FROM open)
           AND g.next_send_at < clock_timestamp() + make_interval(secs => ${SEND_SLOT_HORIZON_MS / 1000}::float8)
        RETURNING g.next_send_at - make_interval(secs => ${rate}) AS send_at
      ), may_send AS (
        SELECT (SELECT open FROM open)
           AND (${gate.slotReserved}::boolean
                OR EXISTS (SELECT 1 FROM slot WHERE send_at <= clock_timestamp() + interval '1 millisecond')
                ) AS may_send
      )`;
}

/** The claim statement's columns of claimGateCtes, as ClaimGateRow. */
export const CLAIM_GATE_COLUMNS = raw(`(SELECT may_send FROM may_send) AS may_send,
             (SELECT (extract(epoch FROM send_at - clock_timestamp()) * 1000)::float8 FROM slot) AS send_in_ms,
             (SELECT state FROM gate) AS state, (SELECT pause_reason FROM gate) AS pause_reason,
             (SELECT CASE WHEN next_send_at > clock_timestamp()
                          THEN (extract(epoch FROM next_send_at - clock_timestamp()) * 1000)::float8 END
                FROM gate) AS next_send_in_ms`);

export interface ClaimGateRow {
  may_send: boolean;
  send_in_ms: number | null;
  /** Null: the queue has no gate row yet. */
  state: PartnerState | null;
  pause_reason: string | null;
  next_send_in_ms: number | null;
}

/** The gate kept an open delivery from its claim: a send slot in the near future, or none within the horizon. */
export type SlotWait =
  { readonly kind: 'slot'; readonly sendInMs: number } | { readonly kind: 'throttled'; readonly retryInMs: number };

/** The wait for a send slot the claim's gate parts found, if the gate was open but gave no slot now. */
export function slotWait(row: ClaimGateRow, gate: GateClaim): SlotWait | undefined {
  if (row.may_send || (row.state !== 'active' && !gate.bypassHold)) return undefined;
  if (row.send_in_ms !== null) return { kind: 'slot', sendInMs: row.send_in_ms };
  if (!gate.slotReserved) return { kind: 'throttled', retryInMs: (row.next_send_in_ms ?? 0) - SEND_SLOT_HORIZON_MS };
  return undefined;
}
