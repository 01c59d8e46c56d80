import type { Knex } from 'knex';
import { raw, runSql, sql } from '../../db/sql';
import { setSubjectKeys } from './subject-reindex';
import { BODY_COLUMNS, type BodyColumns } from '../webhooks/webhook-rows';
import { ATTEMPT_IN_FLIGHT_SQL, settlePlace, type NextInLane } from '../ordering/lanes';

/** An erased place (of ordering_places) whose webhook has an attempt in flight. */
const ERASED_IN_FLIGHT = sql`EXISTS (SELECT 1 FROM webhook_events w WHERE w.id = ordering_places.webhook_id
  AND ${ATTEMPT_IN_FLIGHT_SQL})`;

// The erasure workflow's statements (workflows/personal-data/erase-subject.ts, activities/personal-data/erasure.ts):
// the subject index completed for rows written before it, the one transaction that erases the subject's webhooks, and
// the record of the Temporal workflow ids whose runs it deletes. Each is idempotent, so a retried or replayed step
// changes nothing twice.

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
         WHERE subject_keys IS NULL AND payload_removed_at IS NULL
           AND id > COALESCE(${after}::uuid, '00000000-0000-0000-0000-000000000000')
         ORDER BY id LIMIT ${limit}`,
  );
}

/**
 * Writes each row's keys under index key `keyId` ({} for a body naming no subject), unless a concurrent write set them
 * first.
 */
export const writeSubjectKeys = (
  knex: Knex,
  rows: ReadonlyArray<{ id: string; keys: readonly string[] }>,
  keyId: string,
): Promise<number> => setSubjectKeys(knex, rows, keyId, raw('w.subject_keys IS NULL'));

/** What the erasing transaction did, as the erasures row keeps it. */
export interface ErasedCounts {
  readonly webhooksFound: number;
  readonly deliveriesCancelled: number;
  readonly bodiesRemoved: number;
}

/**
 * The erasure's one short transaction: every webhook whose subject keys hold one of the erasure's keys (and of
 * its company, when it names one) has its workflow id recorded in erasure_runs (every run of it is deleted; a
 * test send has none and skips Temporal); a pending delivery (waiting or
 * held) becomes cancelled by erasure; the body and its attempts' response excerpts are removed; the row's
 * subject keys are emptied, so no later erasure finds it again; an ordered webhook's place settles, and every
 * lane of the subject that no unsettled webhook needs loses its key (forgetSubjectLanes). The counts go to the
 * erasures row, which also marks the step done: a retry after a lost reply returns the counts recorded and changes
 * nothing.
 */
export async function eraseSubjectWebhooks(knex: Knex, erasureId: string): Promise<ErasedCounts> {
  return knex.transaction(async (trx) => {
    const [erasure] = await runSql<{
      subject_keys: string[];
      company_id: string | null;
      webhooks_found: number | null;
    }>(
      trx,
      sql`SELECT subject_keys, company_id, webhooks_found FROM erasures WHERE id = ${erasureId}::uuid FOR UPDATE`,
    );
    if (!erasure) throw new Error(`erasure ${erasureId} does not exist`);
    if (erasure.webhooks_found !== null) return recordedCounts(trx, erasureId);
    const [counts] = await runSql<{ found: number; cancelled: number; removed: number; ids: string[] }>(
      trx,
      sql`WITH found AS (
            SELECT id, workflow_id, run_id, status = 'pending' AS cancels, payload_removed_at IS NULL AS removes
              FROM webhook_events
             WHERE subject_keys && ${erasure.subject_keys}::text[]
               AND (${erasure.company_id}::text IS NULL OR company_id = ${erasure.company_id}::text)
               FOR UPDATE
          ), runs AS (
            INSERT INTO erasure_runs (erasure_id, workflow_id, run_id, webhook_id)
            SELECT ${erasureId}::uuid, workflow_id, '', id FROM found WHERE workflow_id IS NOT NULL
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
          SELECT count(*)::int AS found, (count(*) FILTER (WHERE cancels))::int AS cancelled,
            (count(*) FILTER (WHERE removes))::int AS removed,
                 COALESCE(array_agg(id::text), '{}') AS ids
            FROM found`,
    );
    // A statement of its own, so it also sees an attempt recorded while the one above waited for its rows' locks;
    // by the rows found, test sends (which have no workflow id) included.
    await runSql(
      trx,
      sql`UPDATE webhook_attempts SET response_body = NULL, response_body_sealed = NULL, response_body_key_id = NULL
           WHERE webhook_id = ANY(${counts.ids}::uuid[]) AND
             (response_body IS NOT NULL OR response_body_sealed IS NOT NULL)`,
    );
    // Ordered webhooks: a cancelled one settles its place, leaving a gap (the ordering sweep wakes what queued
    // behind it), unless an attempt of it is in flight: that place settles once the attempt is over (its record,
    // or the ordering sweep after the longest attempt), so the next webhook of its key never overlaps it.
    await runSql(
      trx,
      sql`UPDATE ordering_places SET gap = gap OR (settled_at IS NULL AND NOT ${ERASED_IN_FLIGHT}),
                 settled_at = CASE WHEN ${ERASED_IN_FLIGHT} THEN settled_at
                   ELSE COALESCE(settled_at, now()) END, waiting_since = NULL
           WHERE webhook_id = ANY(${counts.ids}::uuid[])`,
    );
    await forgetSubjectLanes(trx, erasure.subject_keys, counts.ids);
    await runSql(
      trx,
      sql`UPDATE erasures SET webhooks_found = ${counts.found}, deliveries_cancelled = ${counts.cancelled},
        bodies_removed = ${counts.removed}, updated_at = now()
           WHERE id = ${erasureId}::uuid`,
    );
    return { webhooksFound: counts.found, deliveriesCancelled: counts.cancelled, bodiesRemoved: counts.removed };
  });
}

/**
 * Every lane of the subject (by the subject keys it learnt at each placement, so also one whose webhooks another
 * erasure or the purge took, or of the webhooks `ids` found) loses its key, its digest and its subjects once no
 * unsettled place needs it. Its lanes are locked first, in id order; the decision is a statement of its own, on a
 * snapshot taken after the locks: a lane that got a place while this erasure waited for it keeps its key.
 */
async function forgetSubjectLanes(trx: Knex.Transaction, subjectKeys: readonly string[], ids: readonly string[]) {
  const locked = await runSql<{ id: string }>(
    trx,
    sql`SELECT id FROM ordering_lanes
         WHERE id IN (SELECT lane_id FROM ordering_lane_subjects WHERE subject_key = ANY(${subjectKeys}::text[])
                      UNION SELECT lane_id FROM ordering_places WHERE webhook_id = ANY(${ids}::uuid[]))
         ORDER BY id FOR UPDATE`,
  );
  if (locked.length === 0) return;
  await runSql(
    trx,
    sql`WITH quiet AS (
          UPDATE ordering_lanes l
             SET key_digest = NULL, key_text = NULL, key_sealed = NULL, key_key_id = NULL, index_key_id = NULL
           WHERE l.id = ANY(${locked.map(({ id }) => id)}::bigint[])
             AND NOT EXISTS (SELECT 1 FROM ordering_places p WHERE p.lane_id = l.id AND p.settled_at IS NULL)
          RETURNING l.id
        )
        DELETE FROM ordering_lane_subjects WHERE lane_id IN (SELECT id FROM quiet)`,
  );
}

/** Where the erasure's lanes stand after its runs are gone: the webhooks to wake, and the lanes still held. */
export interface ErasureLanes {
  /** The next webhook of each lane whose erased head settled here. */
  readonly next: NextInLane[];
  /** Lanes of the subject an erased webhook's attempt in flight still holds: their key stays until it ends. */
  readonly held: number;
}

/**
 * The last lane step of an erasure, once Temporal holds none of its runs: a place the erasing transaction left
 * unsettled for an attempt in flight settles (a gap) once that attempt is recorded or `inFlightBoundMs` after the
 * erasure; then every lane of the subject no unsettled place needs is forgotten, as in the erasing transaction.
 * The erasure is not completed while `held` is above 0, so `completed` means no lane holds the key.
 */
export async function forgetErasureLanes(
  knex: Knex,
  erasureId: string,
  inFlightBoundMs: number,
): Promise<ErasureLanes> {
  const [erasure] = await runSql<{ subject_keys: string[]; ids: string[] }>(
    knex,
    sql`SELECT e.subject_keys,
               COALESCE(array_agg(r.webhook_id::text) FILTER (WHERE r.webhook_id IS NOT NULL), '{}') AS ids
          FROM erasures e LEFT JOIN erasure_runs r ON r.erasure_id = e.id
         WHERE e.id = ${erasureId}::uuid GROUP BY e.subject_keys`,
  );
  if (!erasure) throw new Error(`erasure ${erasureId} does not exist`);
  const ended = await runSql<{ webhook_id: string }>(
    knex,
    sql`SELECT p.webhook_id FROM ordering_places p JOIN webhook_events w ON w.id = p.webhook_id
         WHERE p.webhook_id = ANY(${erasure.ids}::uuid[]) AND p.settled_at IS NULL
           AND (NOT ${ATTEMPT_IN_FLIGHT_SQL} OR w.finished_at <= clock_timestamp() - ${inFlightBoundMs} * interval
             '1 millisecond')`,
  );
  const next: NextInLane[] = [];
  for (const { webhook_id: webhookId } of ended) {
    const settled = await settlePlace(knex, webhookId, true);
    if (settled.next) next.push(settled.next);
  }
  await knex.transaction((trx) => forgetSubjectLanes(trx, erasure.subject_keys, erasure.ids));
  const [{ held }] = await runSql<{ held: number }>(
    knex,
    sql`SELECT count(DISTINCT p.lane_id)::int AS held FROM ordering_places p JOIN ordering_lanes l ON l.id = p.lane_id
         WHERE p.webhook_id = ANY(${erasure.ids}::uuid[]) AND p.settled_at IS NULL AND l.key_digest IS NOT NULL`,
  );
  return { next, held };
}

async function recordedCounts(knex: Knex, erasureId: string): Promise<ErasedCounts> {
  const [row] = await runSql<{ webhooks_found: number; deliveries_cancelled: number; bodies_removed: number }>(
    knex,
    sql`SELECT webhooks_found, deliveries_cancelled, bodies_removed FROM erasures WHERE id = ${erasureId}::uuid`,
  );
  return {
    webhooksFound: row.webhooks_found,
    deliveriesCancelled: row.deliveries_cancelled,
    bodiesRemoved: row.bodies_removed,
  };
}

/**
 * One workflow id whose runs an erasure deletes, all of them (the recorded one, resets, a start that lands
 * late). `settled`: its webhook's start is known (the row has its run, or is gone); until then a run may
 * still appear, so the erasure waits. `confirming`: a sweep found it quiet at least `pauseMs` ago, and this look
 * confirms it gone or not.
 */
export interface ErasureWorkflow {
  readonly workflowId: string;
  readonly settled: boolean;
  readonly confirming: boolean;
}

/**
 * The erasure's workflow ids Temporal may still hold (`gone_at` unset, `left` of them), except those found quiet
 * less than `pauseMs` ago (`resting`), which wait for their second look: settled ones first, those due for it
 * first among them.
 */
export async function erasureWorkflows(
  knex: Knex,
  erasureId: string,
  limit: number,
  pauseMs: number,
): Promise<{ workflows: ErasureWorkflow[]; left: number; resting: number }> {
  const rows = await runSql<{
    workflow_id: string | null;
    settled: boolean;
    confirming: boolean;
    left: number;
    resting: number;
  }>(
    knex,
    sql`WITH open AS (
          SELECT r.workflow_id, r.quiet_at IS NOT NULL AS confirming,
                 COALESCE(r.quiet_at > now() - ${pauseMs}::int * interval '1 millisecond', false) AS resting,
                 NOT EXISTS (SELECT 1 FROM webhook_events w WHERE w.id = r.webhook_id AND w.run_id IS NULL
                   AND w.workflow_id IS NOT NULL) AS settled
            FROM erasure_runs r WHERE r.erasure_id = ${erasureId}::uuid AND r.gone_at IS NULL
        ), counts AS (
          SELECT count(*)::int AS left, (count(*) FILTER (WHERE resting))::int AS resting FROM open
        )
        SELECT c.left, c.resting, o.workflow_id, o.settled, o.confirming
          FROM counts c
          LEFT JOIN LATERAL (
            SELECT * FROM open WHERE NOT resting ORDER BY settled DESC, confirming DESC, workflow_id LIMIT ${limit}
          ) o ON true`,
  );
  const workflows = rows
    .filter((row) => row.workflow_id !== null)
    .map((row) => ({ workflowId: row.workflow_id!, settled: row.settled, confirming: row.confirming }));
  return { workflows, left: rows[0].left, resting: rows[0].resting };
}

/**
 * Marks a workflow id's runs `deleted` (Temporal still served one, or its start is unsettled: any quiet look so
 * far is void), `quiet` (Temporal served none: the first look, kept if one was already recorded) or `gone` (quiet
 * again at least `pauseMs` after the first look; refused otherwise). Each also means deleted.
 */
export async function markErasureWorkflow(
  knex: Knex,
  erasureId: string,
  workflowId: string,
  mark: 'deleted' | 'quiet' | 'gone',
  pauseMs: number,
): Promise<void> {
  const row = sql`erasure_id = ${erasureId}::uuid AND workflow_id = ${workflowId}`;
  const statements = {
    deleted: sql`UPDATE erasure_runs SET deleted_at = COALESCE(deleted_at, now()), quiet_at = NULL WHERE ${row}`,
    quiet: sql`UPDATE erasure_runs SET deleted_at = COALESCE(deleted_at, now()), quiet_at = COALESCE(quiet_at, now())
      WHERE ${row}`,
    gone: sql`UPDATE erasure_runs SET deleted_at = COALESCE(deleted_at, now()), gone_at = COALESCE(gone_at, now())
               WHERE ${row} AND quiet_at <= now() - ${pauseMs}::int * interval '1 millisecond'`,
  };
  await runSql(knex, statements[mark]);
}

/** Says on the record why the erasure is still pending (null once nothing holds it), and counts the runs deleted. */
export async function notePendingReason(knex: Knex, erasureId: string, reason: string | null): Promise<number> {
  const [row] = await runSql<{ runs_deleted: number }>(
    knex,
    sql`UPDATE erasures
           SET pending_reason = ${reason}, updated_at = now(),
               runs_deleted = (SELECT count(*)::int FROM erasure_runs WHERE erasure_id = ${erasureId}::uuid
                 AND deleted_at IS NOT NULL)
         WHERE id = ${erasureId}::uuid RETURNING runs_deleted`,
  );
  return row.runs_deleted;
}

/** Marks the erasure completed; the first completion time stays. */
export async function completeErasure(knex: Knex, erasureId: string): Promise<void> {
  await runSql(
    knex,
    sql`UPDATE erasures SET status = 'completed', pending_reason = NULL, completed_at = COALESCE(completed_at, now()),
      updated_at = now() WHERE id = ${erasureId}::uuid`,
  );
}
