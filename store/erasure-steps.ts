import type { Knex } from 'knex';
import { runSql, sql } from '../db/sql';
import { BODY_COLUMNS, type BodyColumns } from './webhook-rows';

// The erasure workflow's statements (workflows/erase-subject.ts, activities/erasure.ts): the subject index
// completed for rows written before it, the one transaction that erases the subject's webhooks, and the record
// of the Temporal runs deleted. Each is idempotent, so a retried or replayed step changes nothing twice.

/** A row written before the subject index, with its body (in clear or sealed) to compute the keys from. */
export interface UnindexedRow extends BodyColumns {
  readonly id: string;
}

/**
 * Up to `limit` rows after id `after` with no subject keys yet and a body still stored, in id order (the partial
 * index webhook_events_unindexed). Keyset paging: a row left unindexed (a body no key opens) is passed, not read again.
 */
export async function unindexedRows(knex: Knex, after: string | null, limit: number): Promise<UnindexedRow[]> {
  return runSql<UnindexedRow>(
    knex,
    sql`SELECT id, ${BODY_COLUMNS} FROM webhook_events
         WHERE subject_keys IS NULL AND payload_removed_at IS NULL AND id > COALESCE(${after}::uuid, '00000000-0000-0000-0000-000000000000')
         ORDER BY id LIMIT ${limit}`,
  );
}

/** Writes each row's keys ({} for a body naming no subject), unless a concurrent write set them first. */
export async function writeSubjectKeys(knex: Knex, rows: ReadonlyArray<{ id: string; keys: readonly string[] }>): Promise<number> {
  if (rows.length === 0) return 0;
  const written = await runSql(
    knex,
    sql`UPDATE webhook_events w
           SET subject_keys = ARRAY(SELECT json_array_elements_text(r.value -> 'keys'))
          FROM json_array_elements(${JSON.stringify(rows)}::json) r
         WHERE w.id = (r.value ->> 'id')::uuid AND w.subject_keys IS NULL
     RETURNING w.id`,
  );
  return written.length;
}

/** What the erasing transaction did, as the erasures row keeps it. */
export interface ErasedCounts {
  readonly webhooksFound: number;
  readonly deliveriesCancelled: number;
  readonly bodiesRemoved: number;
}

/**
 * The erasure's one short transaction: every webhook whose subject keys hold the erasure's key (and of its
 * company, when it names one) has its Temporal run recorded in erasure_runs; a pending delivery (waiting or
 * held) becomes cancelled by erasure; the body and its attempts' response excerpts are removed; the row's
 * subject keys are emptied, so no later erasure finds it again. The counts go to the erasures row, which also
 * marks the step done: a retry after a lost reply returns the counts recorded and changes nothing.
 */
export async function eraseSubjectWebhooks(knex: Knex, erasureId: string): Promise<ErasedCounts> {
  return knex.transaction(async (trx) => {
    const [erasure] = await runSql<{ subject_key: string; company_id: string | null; webhooks_found: number | null }>(
      trx,
      sql`SELECT subject_key, company_id, webhooks_found FROM erasures WHERE id = ${erasureId}::uuid FOR UPDATE`,
    );
    if (!erasure) throw new Error(`erasure ${erasureId} does not exist`);
    if (erasure.webhooks_found !== null) return recordedCounts(trx, erasureId);
    const [counts] = await runSql<{ found: number; cancelled: number; removed: number }>(
      trx,
      sql`WITH found AS (
            SELECT id, workflow_id, run_id, status = 'pending' AS cancels, payload_removed_at IS NULL AS removes
              FROM webhook_events
             WHERE subject_keys @> ARRAY[${erasure.subject_key}::text]
               AND (${erasure.company_id}::text IS NULL OR company_id = ${erasure.company_id}::text)
               FOR UPDATE
          ), runs AS (
            INSERT INTO erasure_runs (erasure_id, workflow_id, run_id, webhook_id)
            SELECT ${erasureId}::uuid, workflow_id, COALESCE(run_id, ''), id FROM found
            ON CONFLICT DO NOTHING
          ), erased AS (
            UPDATE webhook_events w
               SET status = CASE WHEN f.cancels THEN 'cancelled' ELSE w.status END,
                   status_reason = CASE WHEN f.cancels THEN 'erasure' ELSE w.status_reason END,
                   finished_at = CASE WHEN f.cancels THEN COALESCE(w.finished_at, now()) ELSE w.finished_at END,
                   held_since = CASE WHEN f.cancels THEN NULL ELSE w.held_since END,
                   held_queue = CASE WHEN f.cancels THEN NULL ELSE w.held_queue END,
                   body = NULL, body_sealed = NULL, body_key_id = NULL,
                   payload_removed_at = COALESCE(w.payload_removed_at, now()),
                   payload_removed_reason = COALESCE(w.payload_removed_reason, 'erasure'),
                   subject_keys = '{}'
              FROM found f WHERE w.id = f.id
          )
          SELECT count(*)::int AS found, (count(*) FILTER (WHERE cancels))::int AS cancelled, (count(*) FILTER (WHERE removes))::int AS removed
            FROM found`,
    );
    // A statement of its own, so it also sees an attempt recorded while the one above waited for its rows' locks.
    await runSql(
      trx,
      sql`UPDATE webhook_attempts SET response_body = NULL, response_body_sealed = NULL, response_body_key_id = NULL
           WHERE webhook_id IN (SELECT webhook_id FROM erasure_runs WHERE erasure_id = ${erasureId}::uuid)
             AND (response_body IS NOT NULL OR response_body_sealed IS NOT NULL)`,
    );
    await runSql(
      trx,
      sql`UPDATE erasures SET webhooks_found = ${counts.found}, deliveries_cancelled = ${counts.cancelled}, bodies_removed = ${counts.removed}, updated_at = now()
           WHERE id = ${erasureId}::uuid`,
    );
    return { webhooksFound: counts.found, deliveriesCancelled: counts.cancelled, bodiesRemoved: counts.removed };
  });
}

async function recordedCounts(knex: Knex, erasureId: string): Promise<ErasedCounts> {
  const [row] = await runSql<{ webhooks_found: number; deliveries_cancelled: number; bodies_removed: number }>(
    knex,
    sql`SELECT webhooks_found, deliveries_cancelled, bodies_removed FROM erasures WHERE id = ${erasureId}::uuid`,
  );
  return { webhooksFound: row.webhooks_found, deliveriesCancelled: row.deliveries_cancelled, bodiesRemoved: row.bodies_removed };
}

/** One Temporal run an erasure deletes: `runId` '' when the row never learnt it (the workflow id's latest run). */
export interface ErasureRun {
  readonly workflowId: string;
  readonly runId: string;
}

/** The erasure's runs not yet deleted (`deleted_at`) or, with `notGone`, not yet confirmed gone (`gone_at`). */
export async function erasureRuns(knex: Knex, erasureId: string, which: 'undeleted' | 'notGone'): Promise<ErasureRun[]> {
  const rows = await runSql<{ workflow_id: string; run_id: string }>(
    knex,
    which === 'undeleted'
      ? sql`SELECT workflow_id, run_id FROM erasure_runs WHERE erasure_id = ${erasureId}::uuid AND deleted_at IS NULL ORDER BY workflow_id, run_id`
      : sql`SELECT workflow_id, run_id FROM erasure_runs WHERE erasure_id = ${erasureId}::uuid AND gone_at IS NULL ORDER BY workflow_id, run_id`,
  );
  return rows.map((row) => ({ workflowId: row.workflow_id, runId: row.run_id }));
}

/** Marks one run deleted (`deleted`) or gone from Temporal (`gone`, which also means deleted). */
export async function markErasureRun(knex: Knex, erasureId: string, run: ErasureRun, mark: 'deleted' | 'gone'): Promise<void> {
  await runSql(
    knex,
    mark === 'deleted'
      ? sql`UPDATE erasure_runs SET deleted_at = COALESCE(deleted_at, now())
             WHERE erasure_id = ${erasureId}::uuid AND workflow_id = ${run.workflowId} AND run_id = ${run.runId}`
      : sql`UPDATE erasure_runs SET deleted_at = COALESCE(deleted_at, now()), gone_at = COALESCE(gone_at, now())
             WHERE erasure_id = ${erasureId}::uuid AND workflow_id = ${run.workflowId} AND run_id = ${run.runId}`,
  );
}

/** The count of the erasure's runs deleted, on its record. */
export async function countDeletedRuns(knex: Knex, erasureId: string): Promise<number> {
  const [row] = await runSql<{ runs_deleted: number }>(
    knex,
    sql`UPDATE erasures
           SET runs_deleted = (SELECT count(*)::int FROM erasure_runs WHERE erasure_id = ${erasureId}::uuid AND deleted_at IS NOT NULL), updated_at = now()
         WHERE id = ${erasureId}::uuid RETURNING runs_deleted`,
  );
  return row.runs_deleted;
}

/** Marks the erasure completed; the first completion time stays. */
export async function completeErasure(knex: Knex, erasureId: string): Promise<void> {
  await runSql(
    knex,
    sql`UPDATE erasures SET status = 'completed', completed_at = COALESCE(completed_at, now()), updated_at = now() WHERE id = ${erasureId}::uuid`,
  );
}
