import { setTimeout as delay } from 'node:timers/promises';
import type { Knex } from 'knex';
import { randomUUID } from 'node:crypto';
import { prepared, runSql, sql, type SqlFragment } from '../../db/sql';
import { purgeAuditEvents, type AuditPurge } from '../access/audit-chain';
import { insertAuditEvent } from '../access/audit';
import type { RetentionPolicy } from '../../lib/retention';
import { deleteEmptyLanes } from '../ordering/empty-lanes';

// The retention purge's statements: each one bounded batch, its own short transaction (autocommit), on the
// partial indexes webhook_events_payload_due and webhook_events_log_due. Rows another transaction holds are
// skipped, never waited for, so ingestion and deliveries do not queue behind the purge. Only finished webhooks
// (finished_at set) are ever touched: a held, pending or waiting one has none.

/** Rows one statement removes or deletes at most: a few milliseconds of locks, and of WAL to flush, each. */
export const RETENTION_BATCH_SIZE = 500;

/**
 * The purge pauses after each batch nine times as long as the batch took (PurgeOptions.pauseRatio): it works
 * a tenth of the time (docs/decisions.md, "Bounded batches on the purge's partial indexes").
 */
export const RETENTION_PAUSE_RATIO = 9;

/** The two cutoffs of one run: bodies of webhooks finished before `payloadCutoff`, rows before `logCutoff`. */
export interface RetentionCutoffs {
  readonly payloadCutoff: Date;
  readonly logCutoff: Date;
}

/**
 * What a purge call deletes: the run's webhook cutoffs, and audit rows older than `auditCutoff`. The audit
 * cutoff is not part of the run's record: each purge call reads it from AUDIT_RETENTION_DAYS at its start.
 */
export interface PurgeCutoffs extends RetentionCutoffs {
  readonly auditCutoff: Date;
}

const DAY_MS = 86_400_000;

/** The audit rows' cutoff at `now`: rows made before it are due. */
export const auditCutoff = (now: Date, policy: Pick<RetentionPolicy, 'auditDays'>): Date =>
  daysBefore(now, policy.auditDays);

const daysBefore = (now: Date, days: number): Date => new Date(now.getTime() - days * DAY_MS);

/**
 * Days a row outlives Temporal's own retention of its closed run: Temporal deletes expired runs in the
 * background, so a row goes only once its run is surely gone (an erasure finds a run through its row).
 */
export const TEMPORAL_RETENTION_MARGIN_DAYS = 1;

/**
 * The cutoffs of a run at `now` under the configured days of retention. A row goes after WEBHOOK_LOG_RETENTION_DAYS,
 * or after the namespace's retention (`temporalRetentionSeconds`) and a day, whichever is later.
 */
export function retentionCutoffs(now: Date, policy: RetentionPolicy, temporalRetentionSeconds = 0): PurgeCutoffs {
  const runGoneBy = new Date(
    now.getTime() -
      temporalRetentionSeconds * 1000 -
      (temporalRetentionSeconds ? TEMPORAL_RETENTION_MARGIN_DAYS * DAY_MS : 0),
  );
  const logCutoff = daysBefore(now, policy.logDays);
  return {
    payloadCutoff: daysBefore(now, policy.payloadDays),
    logCutoff: runGoneBy < logCutoff ? runGoneBy : logCutoff,
    auditCutoff: auditCutoff(now, policy),
  };
}

/**
 * Removes the bodies of at most `limit` webhooks finished before `cutoff` whose body is still stored, with their
 * attempts' response excerpts; the rows, attempts and statuses stay. Returns how many bodies it removed.
 */
export async function removeDueBodies(
  knex: Knex,
  cutoff: Date,
  removedAt: Date,
  limit = RETENTION_BATCH_SIZE,
): Promise<number> {
  const [row] = await runSql<{ removed: number }>(knex, removeBodiesStatement(cutoff, removedAt, limit));
  return row.removed;
}

/** The statement of one batch of body removals (exported for its EXPLAIN test). */
export const removeBodiesStatement = (cutoff: Date, removedAt: Date, limit: number): SqlFragment =>
  prepared(
    'retention-remove-bodies',
    sql`WITH due AS (
            UPDATE webhook_events SET body = NULL, body_sealed = NULL, body_key_id = NULL,
                   payload_removed_at = ${removedAt.toISOString()}, payload_removed_reason = 'retention',
                     updated_at = now()
             WHERE id = ANY(ARRAY(
                     SELECT id FROM webhook_events
                      WHERE payload_removed_at IS NULL AND finished_at IS NOT NULL
                        AND finished_at < ${cutoff.toISOString()}
                      ORDER BY finished_at LIMIT ${limit} FOR UPDATE SKIP LOCKED))
               AND payload_removed_at IS NULL
            RETURNING id
          ), excerpts AS (
            UPDATE webhook_attempts SET response_body = NULL, response_body_sealed = NULL, response_body_key_id = NULL
             WHERE webhook_id = ANY(ARRAY(SELECT id FROM due))
               AND (response_body IS NOT NULL OR response_body_sealed IS NOT NULL)
          )
          SELECT count(*)::int AS removed FROM due`,
  );

/**
 * Deletes at most `limit` webhooks finished before `cutoff`, with their attempts and places (cascade) and their
 * redeliveries, then the lanes those places leave empty. An original goes only when every redelivery of it is due
 * too: deleting it cascades to them (redelivery_of … ON DELETE CASCADE), so one still running or finished later
 * keeps it. Returns the rows deleted, redeliveries included.
 */
export async function deleteDueRows(knex: Knex, cutoff: Date, limit = RETENTION_BATCH_SIZE): Promise<number> {
  const [row] = await runSql<{ deleted: number; lanes: string[] }>(knex, deleteRowsStatement(cutoff, limit));
  await deleteEmptyLanes(knex, row.lanes);
  return row.deleted;
}

/** One batch of row deletions, naming the lanes it took places from (exported for its EXPLAIN test). */
export const deleteRowsStatement = (cutoff: Date, limit: number): SqlFragment =>
  prepared(
    'retention-delete-rows',
    sql`WITH due AS (
            SELECT ARRAY(
              SELECT e.id FROM webhook_events e
               WHERE e.finished_at IS NOT NULL AND e.finished_at < ${cutoff.toISOString()}
                 AND NOT EXISTS (SELECT 1 FROM webhook_events r
                                  WHERE r.redelivery_of = e.id
                                    AND (r.finished_at IS NULL OR r.finished_at >= ${cutoff.toISOString()}))
               ORDER BY e.finished_at LIMIT ${limit} FOR UPDATE SKIP LOCKED) AS ids
          ), gone AS (
            DELETE FROM webhook_events WHERE id = ANY((SELECT ids FROM due)::uuid[])
              OR redelivery_of = ANY((SELECT ids FROM due)::uuid[]) RETURNING id
          )
          SELECT count(*)::int AS deleted,
                 ARRAY(SELECT DISTINCT p.lane_id::text FROM ordering_places p
                        WHERE p.webhook_id = ANY(ARRAY(SELECT id FROM gone))) AS lanes
            FROM gone`,
  );

/** The actor of the audit.purge rows a scheduled run writes (the CLI's `retention run` writes its own). */
export const SCHEDULED_PURGE_ACTOR = 'retention-schedule';

/**
 * One batch of the audit trail's purge (store/access/audit-chain.ts): up to `limit` of its oldest rows made before
 * `cutoff`, and, in the same transaction, an `audit.purge` row naming `actor`, the rows removed and the new
 * anchor, so that `audit verify` can tell the purge's removals from anyone else's. Stops at a row that is not
 * intact (blockedAt): the evidence of tampering stays.
 */
export function purgeDueAuditEvents(
  knex: Knex,
  cutoff: Date,
  actor: string,
  limit = RETENTION_BATCH_SIZE,
): Promise<AuditPurge> {
  return knex.transaction(async (trx) => {
    const purge = await purgeAuditEvents(trx, cutoff, limit);
    if (purge.removed > 0) {
      await insertAuditEvent(trx, {
        operationId: randomUUID(),
        phase: 'outcome',
        actor,
        action: 'audit.purge',
        target: null,
        parameters: {
          rows_removed: purge.removed,
          anchor_seq: purge.anchorSeq,
          anchor_hash: purge.anchorHash.toString('hex'),
          cutoff: cutoff.toISOString(),
        },
        outcome: 'succeeded',
        error: null,
        requestId: null,
      });
    }
    return purge;
  });
}

/** What a purge has done so far. */
export interface PurgeCounts {
  readonly bodiesRemoved: number;
  readonly rowsDeleted: number;
}

export interface PurgeProgress extends PurgeCounts {
  /** Audit rows deleted (not part of the run's record: they are not webhooks). */
  readonly auditEventsDeleted: number;
  /** The audit row the purge stopped at for not being intact or chained (`audit verify` names why); null when none. */
  readonly auditBlockedAt: number | null;
  /** True when nothing is left that is due under these cutoffs. */
  readonly done: boolean;
}

export interface PurgeOptions {
  readonly batchSize?: number;
  /**
   * After each batch, a pause of this many times the batch's own time: at 9 the purge works at most a tenth of
   * the time, and leaves PostgreSQL (and the CPU it shares) to ingestion and deliveries for the rest.
   */
  readonly pauseRatio?: number;
  /** Stop after the batch that ends past this time (performance.now()), leaving the rest for the next call. */
  readonly untilMs?: number;
  /** Who the audit.purge rows name: SCHEDULED_PURGE_ACTOR unless given. */
  readonly auditActor?: string;
  /** Called after every batch with the counts of that batch: the activity heartbeats and records them here. */
  readonly afterBatch?: (batch: PurgeCounts) => Promise<void> | void;
}

/**
 * Runs batches until nothing is due or the time is up: rows first (a row that goes needs no body removal),
 * then bodies, then audit rows. A batch smaller than the limit means that kind is done.
 */
export async function purgeDue(
  knex: Knex,
  cutoffs: PurgeCutoffs,
  removedAt: Date,
  {
    batchSize = RETENTION_BATCH_SIZE,
    pauseRatio = RETENTION_PAUSE_RATIO,
    untilMs = Infinity,
    auditActor = SCHEDULED_PURGE_ACTOR,
    afterBatch,
  }: PurgeOptions = {},
): Promise<PurgeProgress> {
  let bodiesRemoved = 0;
  let rowsDeleted = 0;
  let auditEventsDeleted = 0;
  let auditBlockedAt: number | null = null;
  let rowsLeft = true;
  let bodiesLeft = true;
  for (;;) {
    const batchStarted = performance.now();
    const deleted = rowsLeft ? await deleteDueRows(knex, cutoffs.logCutoff, batchSize) : 0;
    // A batch may delete more than batchSize rows (redeliveries go with their original), never fewer when full.
    if (rowsLeft && deleted < batchSize) rowsLeft = false;
    const removed =
      !rowsLeft && bodiesLeft ? await removeDueBodies(knex, cutoffs.payloadCutoff, removedAt, batchSize) : 0;
    if (!rowsLeft && removed < batchSize) bodiesLeft = false;
    // Audit rows last, once the webhooks are done: the batch that finished the bodies may go on with them.
    const purge = !bodiesLeft ? await purgeDueAuditEvents(knex, cutoffs.auditCutoff, auditActor, batchSize) : undefined;
    const audited = purge?.removed ?? 0;
    auditBlockedAt = purge?.blockedAt ?? auditBlockedAt;
    bodiesRemoved += removed;
    rowsDeleted += deleted;
    auditEventsDeleted += audited;
    await afterBatch?.({ bodiesRemoved: removed, rowsDeleted: deleted });
    const done = !bodiesLeft && audited < batchSize;
    if (done || performance.now() >= untilMs)
      return { bodiesRemoved, rowsDeleted, auditEventsDeleted, auditBlockedAt, done };
    await delay((performance.now() - batchStarted) * pauseRatio);
  }
}

/**
 * When the oldest body still stored of a finished webhook finished, or null: the first entry of the partial
 * index webhook_events_payload_due.
 */
export async function oldestStoredBody(knex: Knex): Promise<Date | null> {
  const [row] = await runSql<{ finished_at: Date | null }>(knex, OLDEST_BODY_STATEMENT);
  return row.finished_at;
}

export const OLDEST_BODY_STATEMENT = prepared(
  'retention-oldest-body',
  sql`SELECT min(finished_at) AS finished_at FROM webhook_events WHERE payload_removed_at IS NULL
    AND finished_at IS NOT NULL`,
);
