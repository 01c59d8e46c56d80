import type { Knex } from 'knex';
import { runSql, sql } from '../../db/sql';
import type { RetentionSummary } from '../../lib/retention';
import type { RetentionTrigger } from '../../lib/vocabulary';
import {
  purgeDue,
  type PurgeCounts,
  type PurgeCutoffs,
  type PurgeOptions,
  type PurgeProgress,
  type RetentionCutoffs,
} from './retention-purge';

// The record of each retention run (`retention_runs`): what started it, its cutoffs, what it removed so far and
// when it finished. It holds no personal data.

export interface RetentionRun extends RetentionCutoffs, PurgeCounts {
  readonly id: string;
  readonly taskQueue: string;
  readonly trigger: RetentionTrigger;
  readonly startedAt: Date;
  readonly finishedAt: Date | null;
}

interface RetentionRunRow {
  id: string;
  task_queue: string;
  trigger: RetentionTrigger;
  started_at: Date;
  finished_at: Date | null;
  payload_cutoff: Date;
  log_cutoff: Date;
  bodies_removed: string;
  rows_deleted: string;
}

const asRun = (row: RetentionRunRow): RetentionRun => ({
  id: row.id,
  taskQueue: row.task_queue,
  trigger: row.trigger,
  startedAt: row.started_at,
  finishedAt: row.finished_at,
  payloadCutoff: row.payload_cutoff,
  logCutoff: row.log_cutoff,
  bodiesRemoved: Number(row.bodies_removed),
  rowsDeleted: Number(row.rows_deleted),
});

/** A run's record as the workflow returns it. */
export function retentionSummary(run: RetentionRun): RetentionSummary {
  return {
    runId: run.id,
    trigger: run.trigger,
    payloadCutoff: run.payloadCutoff.toISOString(),
    logCutoff: run.logCutoff.toISOString(),
    startedAt: run.startedAt.toISOString(),
    finishedAt: (run.finishedAt ?? run.startedAt).toISOString(),
    bodiesRemoved: run.bodiesRemoved,
    rowsDeleted: run.rowsDeleted,
  };
}

export async function insertRetentionRun(
  knex: Knex,
  run: { readonly taskQueue: string; readonly trigger: RetentionTrigger; readonly startedAt: Date } & RetentionCutoffs,
): Promise<RetentionRun> {
  const [row] = await runSql<RetentionRunRow>(
    knex,
    sql`INSERT INTO retention_runs (task_queue, trigger, started_at, payload_cutoff, log_cutoff)
        VALUES (${run.taskQueue}, ${run.trigger}, ${run.startedAt.toISOString()}, ${run.payloadCutoff.toISOString()},
          ${run.logCutoff.toISOString()})
        RETURNING *`,
  );
  return asRun(row);
}

/** Adds one batch's counts, so a run cut short still says what it removed. */
export async function addRetentionCounts(knex: Knex, runId: string, batch: PurgeCounts): Promise<void> {
  await runSql(
    knex,
    sql`UPDATE retention_runs SET bodies_removed = bodies_removed + ${batch.bodiesRemoved},
      rows_deleted = rows_deleted + ${batch.rowsDeleted}
         WHERE id = ${runId}`,
  );
}

export async function finishRetentionRun(knex: Knex, runId: string, finishedAt: Date): Promise<RetentionRun> {
  const [row] = await runSql<RetentionRunRow>(
    knex,
    sql`UPDATE retention_runs SET finished_at = COALESCE(finished_at, ${finishedAt.toISOString()}) WHERE id = ${runId}
      RETURNING *`,
  );
  return asRun(row);
}

/** The latest run on this task queue, finished or not. */
export async function latestRetentionRun(knex: Knex, taskQueue: string): Promise<RetentionRun | undefined> {
  const [row] = await runSql<RetentionRunRow>(
    knex,
    sql`SELECT * FROM retention_runs WHERE task_queue = ${taskQueue} ORDER BY started_at DESC, id DESC LIMIT 1`,
  );
  return row && asRun(row);
}

/**
 * Purges what is due under the run's cutoffs (store/personal-data/retention-purge.ts), adding each batch's counts to
 * its record as it goes, so a run cut short still says what it removed.
 */
export function purgeForRun(
  knex: Knex,
  run: Pick<RetentionRun, 'id'> & PurgeCutoffs,
  removedAt: Date,
  options: PurgeOptions = {},
): Promise<PurgeProgress> {
  return purgeDue(knex, run, removedAt, {
    ...options,
    afterBatch: async (batch) => {
      if (batch.bodiesRemoved || batch.rowsDeleted) await addRetentionCounts(knex, run.id, batch);
      await options.afterBatch?.(batch);
    },
  });
}
