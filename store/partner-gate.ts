import type { Knex } from 'knex';
import { prepared, raw, runSql, sql } from '../db/sql';
import type { PartnerState } from '../lib/vocabulary';

// The partner gate's SQL (db/migrations/014_partner_gate.ts): one row per delivery task queue. The attempt's
// claim and record read and write it inside their own statements (webhook-store.ts); everything else an
// operator or the partner guard does to it is here.

/** The state a gate row is in, from the strongest hold down: an operator's pause wins over the breaker. */
export const GATE_STATE_SQL = `CASE WHEN paused_at IS NOT NULL THEN 'paused'
            WHEN tripped_at IS NOT NULL THEN 'tripped'
            WHEN retry_after_until > clock_timestamp() THEN 'throttled'
            ELSE 'active' END`;

/** Creates the gate of a task queue, open, when it has none. */
export async function ensureGate(knex: Knex, taskQueue: string): Promise<void> {
  await runSql(knex, sql`INSERT INTO partner_gate (task_queue) VALUES (${taskQueue}) ON CONFLICT DO NOTHING`);
}

/** The gate as an operator reads it, with the count of held deliveries. */
export interface GateView {
  readonly state: PartnerState;
  readonly pauseReason: string | null;
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
}

interface GateRow {
  state: PartnerState;
  pause_reason: string | null;
  since: Date | null;
  held: number;
  max_per_second: number | null;
  consecutive_failures: number;
  trips: string;
  tripped_at: Date | null;
  probe_due_at: Date | null;
  retry_after_until: Date | null;
}

export async function readGate(knex: Knex, taskQueue: string): Promise<GateView> {
  await ensureGate(knex, taskQueue);
  const [row] = await runSql<GateRow>(
    knex,
    prepared(
      'read-partner-gate',
      sql`SELECT state, pause_reason, max_per_second, consecutive_failures, trips, tripped_at, probe_due_at, retry_after_until,
                 CASE state WHEN 'paused' THEN paused_at WHEN 'tripped' THEN tripped_at WHEN 'throttled' THEN throttled_since END AS since,
                 (SELECT count(*)::int FROM webhook_events WHERE held_since IS NOT NULL AND held_queue = ${taskQueue} AND status = 'pending') AS held
            FROM (SELECT *, ${raw(GATE_STATE_SQL)} AS state FROM partner_gate WHERE task_queue = ${taskQueue}) gate`,
    ),
  );
  return {
    state: row.state,
    pauseReason: row.pause_reason,
    since: row.since,
    held: row.held,
    maxPerSecond: row.max_per_second,
    consecutiveFailures: row.consecutive_failures,
    trips: Number(row.trips),
    trippedAt: row.tripped_at,
    nextProbeAt: row.tripped_at ? row.probe_due_at : null,
    retryAfterUntil: row.retry_after_until,
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
  await runSql(knex, sql`UPDATE partner_gate SET max_per_second = ${maxPerSecond}, updated_at = now() WHERE task_queue = ${taskQueue}`);
}

/**
 * Makes `owner` the queue's one partner guard for `leaseMs`: true while it holds the lease. A guard that
 * stops answering loses it when the lease runs out, and another worker's guard takes over.
 */
export async function takeGuardLease(knex: Knex, taskQueue: string, owner: string, leaseMs: number): Promise<boolean> {
  const rows = await runSql(
    knex,
    prepared(
      'take-guard-lease',
      sql`UPDATE partner_gate SET guard_owner = ${owner}, guard_lease_until = clock_timestamp() + make_interval(secs => ${leaseMs / 1000})
           WHERE task_queue = ${taskQueue} AND (guard_owner = ${owner} OR guard_lease_until IS NULL OR guard_lease_until < clock_timestamp())
          RETURNING task_queue`,
    ),
  );
  return rows.length === 1;
}

/** Lets another guard take over at once (a worker that stops). */
export async function releaseGuardLease(knex: Knex, taskQueue: string, owner: string): Promise<void> {
  await runSql(knex, sql`UPDATE partner_gate SET guard_lease_until = NULL WHERE task_queue = ${taskQueue} AND guard_owner = ${owner}`);
}

/** Takes the tripped breaker's next probe when it is due: only one caller gets it, and the next is `intervalMs` later. */
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

/** A held delivery, as the guard wakes it. */
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
  await runSql(knex, sql`UPDATE webhook_events SET held_since = NULL WHERE id = ${held.webhookId} AND held_since = ${held.heldSince.toISOString()}::timestamptz`);
}
