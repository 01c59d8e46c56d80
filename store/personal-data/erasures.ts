import type { Knex } from 'knex';
import { runSql, sql } from '../../db/sql';
import type { SubjectKind } from '../../lib/subject-index';

// An erasure's record (the `erasures` row: who asked, when, the subject's HMAC, the counts; never the subject
// in clear) and its reads. The erasure's own statements on webhooks are in erasure-steps.ts.

export interface NewErasure {
  readonly id: string;
  readonly subjectKind: SubjectKind;
  /**
   * The subject's HMAC under each index key searched (lib/subject-index.ts): the only form of the subject the record
   * keeps.
   */
  readonly subjectKeys: readonly string[];
  /** The ids of those keys, in the same order. */
  readonly keyIds: readonly string[];
  readonly companyId: string | null;
  readonly requestedBy: string;
}

export async function insertErasure(knex: Knex, erasure: NewErasure): Promise<void> {
  await runSql(
    knex,
    sql`INSERT INTO erasures (id, subject_kind, subject_key, subject_keys, subject_key_ids, company_id, requested_by)
        VALUES (${erasure.id}::uuid, ${erasure.subjectKind}, ${erasure.subjectKeys[0]}, ${erasure.subjectKeys}::text[],
          ${erasure.keyIds}::text[],
                ${erasure.companyId}, ${erasure.requestedBy})`,
  );
}

/** Removes the record of an erasure whose workflow certainly did not start, unless its work has begun. */
export async function forgetUnstartedErasure(knex: Knex, id: string): Promise<void> {
  await runSql(
    knex,
    sql`DELETE FROM erasures WHERE id = ${id}::uuid AND webhooks_found IS NULL AND status = 'pending'`,
  );
}

/** How long an erasure may be pending before it counts as overdue (the gauge, the alert). */
export const ERASURE_OVERDUE_SECONDS = 15 * 60;

/** Erasures pending for longer than ERASURE_OVERDUE_SECONDS, through the partial index erasures_pending. */
export async function countOverdueErasures(knex: Knex): Promise<number> {
  const [row] = await runSql<{ n: number }>(
    knex,
    sql`SELECT count(*)::int AS n FROM erasures WHERE status = 'pending'
      AND requested_at < now() - make_interval(secs => ${ERASURE_OVERDUE_SECONDS})`,
  );
  return row.n;
}

/** An erasure as its status shows it; the counts are null until the step that makes them has run. */
export interface ErasureView {
  readonly erasure_id: string;
  readonly status: 'pending' | 'completed';
  readonly subject_kind: SubjectKind;
  readonly company_id: string | null;
  readonly requested_by: string;
  readonly requested_at: Date;
  readonly webhooks_found: number | null;
  readonly deliveries_cancelled: number | null;
  readonly bodies_removed: number | null;
  readonly runs_deleted: number | null;
  /** Runs Temporal no longer knows (their deletion is asynchronous); null until the runs are recorded. */
  readonly runs_gone: number | null;
  /**
   * Why a pending erasure is not completed yet (a step failing and retried, runs Temporal still serves, starts not
   * settled); null once nothing holds it.
   */
  readonly pending_reason: string | null;
  /** The subject index keys it searched under (their ids). */
  readonly index_key_ids: string[];
  readonly completed_at: Date | null;
  readonly updated_at: Date;
}

export async function readErasure(knex: Knex, id: string): Promise<ErasureView | undefined> {
  const [row] = await runSql<ErasureView>(
    knex,
    sql`SELECT e.id AS erasure_id, e.status, e.subject_kind, e.company_id, e.requested_by, e.requested_at,
               e.webhooks_found, e.deliveries_cancelled, e.bodies_removed, e.runs_deleted,
               CASE WHEN e.webhooks_found IS NOT NULL
                    THEN (SELECT count(*)::int FROM erasure_runs r WHERE r.erasure_id = e.id AND r.gone_at IS NOT NULL)
                      END AS runs_gone,
               e.pending_reason, e.subject_key_ids AS index_key_ids, e.completed_at, e.updated_at
          FROM erasures e WHERE e.id = ${id}::uuid`,
  );
  return row;
}
