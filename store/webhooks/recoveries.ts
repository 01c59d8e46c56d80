import type { Knex } from 'knex';
import { raw, runSql, sql, type SqlFragment } from '../../db/sql';
import { STORED_WEBHOOK_COLUMNS, type StoredWebhookRow } from './webhook-rows';

// A partner's recovery (migration 030): its row, its numbered originals, and the set-based writes of its batches.
// Every statement here handles a whole batch at once: a 10,000-webhook recovery costs a few dozen statements, not
// four per webhook as the operator's bulk redelivery does (docs/decisions.md, "A partner's recovery").

/** The redelivery key of a recovery's redeliveries: at most one redelivery per original and recovery. */
export const recoveryKey = (recoveryId: string) => `recovery:${recoveryId}`;

/** The key's rows, by the partial index of migration 030 (whose predicate the statement must repeat). */
const byRecoveryKey = (recoveryId: string, alias = 'e'): SqlFragment =>
  sql`${raw(alias)}.redelivery_key = ${recoveryKey(recoveryId)} AND ${raw(alias)}.redelivery_key LIKE 'recovery:%'`;

/** What a recovery redelivers: originals of the app's companies accepted in [since, until). */
export interface RecoveryWindow {
  readonly companyIds: readonly string[];
  readonly since: Date;
  readonly until: Date;
  /** The status the original's latest delivery ended with. */
  readonly status: string;
  readonly eventType?: string;
}

/** A candidate original, as read for its fate, with its place in its key's lane when it is ordered. */
export interface CandidateRow extends StoredWebhookRow {
  lane_id: string | null;
  seq: string | null;
}

/**
 * The originals (never a redelivery, never a test event) of the window whose latest delivery (the original or its
 * newest redelivery, by creation) ended with `status`, in acceptance order: a pending redelivery, or one that ended
 * otherwise (a delivered one), keeps its original out.
 */
export async function recoveryCandidates(knex: Knex, window: RecoveryWindow): Promise<CandidateRow[]> {
  return runSql<CandidateRow>(
    knex,
    sql`SELECT ${STORED_WEBHOOK_COLUMNS}, p.lane_id::text, p.seq::text
          FROM (SELECT o.* FROM webhook_events o
                 WHERE o.redelivery_of IS NULL AND NOT o.is_test AND o.company_id = ANY(${window.companyIds}::text[])
                   AND o.accepted_at >= ${window.since.toISOString()}::timestamptz
                   AND o.accepted_at < ${window.until.toISOString()}::timestamptz
                   AND (${window.eventType ?? null}::text IS NULL OR o.event_type = ${window.eventType ?? null}::text)
               ) w
          JOIN LATERAL (
            SELECT d.status FROM (
              SELECT w.status, w.created_at, w.id
              UNION ALL
              SELECT r.status, r.created_at, r.id FROM webhook_events r WHERE r.redelivery_of = w.id
            ) d ORDER BY d.created_at DESC, d.id DESC LIMIT 1
          ) latest ON latest.status = ${window.status}
          LEFT JOIN ordering_places p ON p.webhook_id = w.id
         ORDER BY w.accepted_at, w.id`,
  );
}

export interface RecoveryRow {
  id: string;
  app_id: string;
  request: Record<string, unknown>;
  state: 'running' | 'completed' | 'cancelled';
  total: number;
  skipped: Record<string, number>;
  next_item: number;
  started: number;
  cancelled: number;
  created_at: Date;
  cancel_requested_at: Date | null;
  finished_at: Date | null;
}

export interface NewRecovery {
  readonly id: string;
  readonly appId: string;
  readonly request: Record<string, unknown>;
  readonly skipped: Record<string, number>;
  /** The originals, in the order they go out. */
  readonly originalIds: readonly string[];
}

/**
 * Writes a recovery and its numbered originals in one transaction; `{running}` (the id of the app's running one,
 * written nothing) when the app has one: the partial unique index decides, so two concurrent calls cannot both run.
 */
export async function insertRecovery(
  knex: Knex,
  recovery: NewRecovery,
): Promise<{ inserted: true } | { inserted: false; running: string }> {
  const { id, appId, request, skipped, originalIds } = recovery;
  const inserted = await knex.transaction(async (trx) => {
    const rows = await runSql<{ id: string }>(
      trx,
      sql`INSERT INTO partner_recoveries (id, app_id, request, total, skipped)
          VALUES (${id}::uuid, ${appId}, ${JSON.stringify(request)}::jsonb, ${originalIds.length},
                  ${JSON.stringify(skipped)}::jsonb)
          ON CONFLICT (app_id) WHERE state = 'running' DO NOTHING RETURNING id`,
    );
    if (rows.length === 0) return false;
    await runSql(
      trx,
      sql`INSERT INTO partner_recovery_items (recovery_id, item, original_id)
          SELECT ${id}::uuid, i.n - 1, i.original_id
            FROM unnest(${originalIds}::uuid[]) WITH ORDINALITY AS i(original_id, n)`,
    );
    return true;
  });
  if (inserted) return { inserted: true };
  const running = await runningRecovery(knex, appId);
  // Finished between the two statements: the caller may try again.
  return { inserted: false, running: running ?? id };
}

export async function runningRecovery(knex: Knex, appId: string): Promise<string | undefined> {
  const [row] = await runSql<{ id: string }>(
    knex,
    sql`SELECT id FROM partner_recoveries WHERE app_id = ${appId} AND state = 'running'`,
  );
  return row?.id;
}

/** A recovery's row, when it is the app's. */
export async function findRecovery(knex: Knex, appId: string, recoveryId: string): Promise<RecoveryRow | undefined> {
  const [row] = await runSql<RecoveryRow>(
    knex,
    sql`SELECT * FROM partner_recoveries WHERE id = ${recoveryId}::uuid AND app_id = ${appId}`,
  );
  return row;
}

/** Removes a recovery whose workflow certainly did not start: nothing of it was written but its row and items. */
export async function deleteUnstartedRecovery(knex: Knex, recoveryId: string): Promise<void> {
  await runSql(knex, sql`DELETE FROM partner_recoveries WHERE id = ${recoveryId}::uuid AND next_item = 0`);
}

/** Asks a running recovery to stop (idempotent); its workflow's next check ends it. */
export async function requestRecoveryCancel(knex: Knex, recoveryId: string): Promise<void> {
  await runSql(
    knex,
    sql`UPDATE partner_recoveries SET cancel_requested_at = COALESCE(cancel_requested_at, now())
         WHERE id = ${recoveryId}::uuid AND state = 'running'`,
  );
}

/** How the recovery's redeliveries stand so far, by status (one index scan of its rows). */
export async function recoveryOutcomes(knex: Knex, recoveryId: string): Promise<Record<string, number>> {
  const rows = await runSql<{ status: string; n: number }>(
    knex,
    sql`SELECT e.status, count(*)::int AS n FROM webhook_events e WHERE ${byRecoveryKey(recoveryId)}
          AND e.start_reported GROUP BY e.status`,
  );
  return Object.fromEntries(rows.map((row) => [row.status, row.n]));
}

/** One original of a batch, as read for its redelivery, with the redelivery an earlier try of the batch wrote. */
export interface BatchItemRow extends StoredWebhookRow {
  item: number;
  event_type: string;
  action: string;
  redelivery_id: string | null;
  redelivery_workflow_id: string | null;
  redelivery_run_id: string | null;
}

/** Where a recovery stands when its next batch is asked for. */
export interface RecoveryCursor {
  readonly state: RecoveryRow['state'];
  readonly total: number;
  readonly nextItem: number;
  readonly cancelRequested: boolean;
}

export async function recoveryCursor(knex: Knex, recoveryId: string): Promise<RecoveryCursor | undefined> {
  const [row] = await runSql<Pick<RecoveryRow, 'state' | 'total' | 'next_item' | 'cancel_requested_at'>>(
    knex,
    sql`SELECT state, total, next_item, cancel_requested_at FROM partner_recoveries WHERE id = ${recoveryId}::uuid`,
  );
  return (
    row && {
      state: row.state,
      total: row.total,
      nextItem: row.next_item,
      cancelRequested: row.cancel_requested_at !== null,
    }
  );
}

/** A redelivery row a batch writes: its ids and its body, sealed again for its own id when the original's is. */
export interface BatchRedelivery {
  readonly item: number;
  readonly webhookId: string;
  readonly workflowId: string;
  readonly originalId: string;
  /** The body sealed for the redelivery's row, hex; null when the original's rests in clear. */
  readonly sealedHex: string | null;
  readonly keyId: string | null;
}

/**
 * Writes a batch in one transaction: the originals `items` [from, to) read FOR SHARE (neither a reseal nor an
 * erasure changes them meanwhile) and handed to `prepare`, then the redeliveries it returns inserted with their
 * places at the end of their originals' lanes, in item order, by one statement. Idempotent: a redelivery an earlier
 * try wrote stays as it is (and keeps its place). Returns the batch's originals with their redeliveries.
 */
export async function writeRecoveryBatch(
  knex: Knex,
  recoveryId: string,
  from: number,
  to: number,
  prepare: (rows: readonly BatchItemRow[]) => BatchRedelivery[],
): Promise<BatchItemRow[]> {
  const key = recoveryKey(recoveryId);
  await knex.transaction(async (trx) => {
    const rows = await readBatch(trx, recoveryId, from, to, { lock: true });
    const fresh = prepare(rows.filter((row) => row.redelivery_id === null));
    if (fresh.length === 0) return;
    const column = <T extends string | null>(pick: (r: BatchRedelivery) => T) => fresh.map((r) => pick(r) ?? '');
    await runSql(
      trx,
      sql`WITH batch AS (
            SELECT * FROM unnest(${column((r) => r.webhookId)}::uuid[], ${column((r) => r.workflowId)}::text[],
              ${column((r) => r.originalId)}::uuid[], ${column((r) => r.sealedHex)}::text[],
              ${column((r) => r.keyId)}::text[], ${column((r) => String(r.item))}::int[])
              AS b(id, workflow_id, original_id, sealed_hex, key_id, item)
          ), created AS (
            INSERT INTO webhook_events (id, event_id, event_type, action, company_id, body, body_sealed, body_key_id,
              subject_keys, subject_key_id, accepted_at, workflow_id, redelivery_of, redelivery_key)
            SELECT b.id, o.event_id, o.event_type, o.action, o.company_id, o.body,
                   decode(NULLIF(b.sealed_hex, ''), 'hex'), NULLIF(b.key_id, ''), o.subject_keys, o.subject_key_id,
                   o.accepted_at, b.workflow_id, o.id, ${key}
              FROM batch b JOIN webhook_events o ON o.id = b.original_id AND o.payload_removed_at IS NULL
            ON CONFLICT (redelivery_of, redelivery_key) DO NOTHING RETURNING id, redelivery_of
          ), ranked AS (
            SELECT c.id, p.lane_id, row_number() OVER (PARTITION BY p.lane_id ORDER BY b.item) AS k
              FROM created c JOIN batch b ON b.id = c.id JOIN ordering_places p ON p.webhook_id = c.redelivery_of
          ), lanes AS (
            UPDATE ordering_lanes l SET last_seq = l.last_seq + r.n
              FROM (SELECT lane_id, count(*) AS n FROM ranked GROUP BY lane_id) r
             WHERE l.id = r.lane_id AND l.key_digest IS NOT NULL
            RETURNING l.id, l.last_seq - r.n AS base
          )
          INSERT INTO ordering_places (webhook_id, lane_id, seq)
          SELECT r.id, r.lane_id, lanes.base + r.k FROM ranked r JOIN lanes ON lanes.id = r.lane_id`,
    );
  });
  return readBatch(knex, recoveryId, from, to, { lock: false });
}

async function readBatch(
  knex: Knex,
  recoveryId: string,
  from: number,
  to: number,
  { lock }: { lock: boolean },
): Promise<BatchItemRow[]> {
  // The originals' columns keep their names (STORED_WEBHOOK_COLUMNS), so the subquery reads them unqualified.
  return runSql<BatchItemRow>(
    knex,
    sql`SELECT i.item, o.*, r.id AS redelivery_id, r.workflow_id AS redelivery_workflow_id,
               r.run_id AS redelivery_run_id
          FROM partner_recovery_items i
          JOIN LATERAL (SELECT ${STORED_WEBHOOK_COLUMNS}, event_type, action FROM webhook_events
                         WHERE id = i.original_id AND payload_removed_at IS NULL ${raw(lock ? 'FOR SHARE' : '')}) o
            ON true
          LEFT JOIN webhook_events r ON r.redelivery_of = o.id AND r.redelivery_key = ${recoveryKey(recoveryId)}
         WHERE i.recovery_id = ${recoveryId}::uuid AND i.item >= ${from} AND i.item < ${to}
         ORDER BY i.item`,
  );
}

/**
 * Records a batch's starts in two statements: each redelivery's run (reported, as a 202 would) and the recovery's
 * cursor moved to `nextItem`, its count of starts raised by the runs this call recorded first.
 */
export async function recordBatchStarts(
  knex: Knex,
  recoveryId: string,
  starts: ReadonlyArray<{ readonly webhookId: string; readonly runId: string }>,
  nextItem: number,
): Promise<void> {
  await runSql(
    knex,
    sql`WITH started AS (
          UPDATE webhook_events e SET run_id = COALESCE(e.run_id, s.run_id), start_reported = true, updated_at = now()
            FROM unnest(${starts.map((s) => s.webhookId)}::uuid[], ${starts.map((s) => s.runId)}::text[])
              AS s(id, run_id)
           WHERE e.id = s.id AND NOT e.start_reported
          RETURNING e.id
        )
        UPDATE partner_recoveries SET next_item = GREATEST(next_item, ${nextItem}),
               started = started + (SELECT count(*) FROM started)
         WHERE id = ${recoveryId}::uuid`,
  );
}

/**
 * Ends a recovery: completed, or cancelled, when the rows a stopped batch wrote but did not start are removed (their
 * places with them: a key's next webhook is not kept waiting for a redelivery that never goes; a webhook queued
 * behind one is woken by the ordering sweep) and what did not start is counted as cancelled.
 */
export async function finishRecovery(knex: Knex, recoveryId: string, state: 'completed' | 'cancelled'): Promise<void> {
  await knex.transaction(async (trx) => {
    if (state === 'cancelled')
      await runSql(
        trx,
        sql`DELETE FROM webhook_events e WHERE ${byRecoveryKey(recoveryId)} AND NOT e.start_reported
              AND e.run_id IS NULL AND e.claimed_attempt = 0`,
      );
    await runSql(
      trx,
      sql`UPDATE partner_recoveries SET state = ${state}, finished_at = now(),
                 cancelled = CASE WHEN ${state} = 'cancelled' THEN total - started ELSE 0 END
           WHERE id = ${recoveryId}::uuid AND state = 'running'`,
    );
  });
}
