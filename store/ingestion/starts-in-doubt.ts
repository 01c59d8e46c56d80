import type { Knex } from 'knex';
import { prepared, runSql, sql } from '../../db/sql';

// The SQL of starts in doubt: rows with a workflow id and no run for longer than the doubt window (the partial
// index webhook_events_without_run). A row without a run is removed with forgetUnstartedWebhook (webhook-ingestion.ts).

/** A stored webhook whose start's outcome is not known: its workflow is looked up by its deterministic id. */
export interface StartInDoubt {
  readonly webhookId: string;
  readonly workflowId: string;
}

const IN_DOUBT = (doubtSeconds: number) =>
  sql`run_id IS NULL AND workflow_id IS NOT NULL AND created_at < now() - make_interval(secs => ${doubtSeconds})`;

/**
 * Takes up to `limit` starts in doubt, oldest first, for this worker to look up: each is stamped, so no other
 * worker takes it again within the doubt window (nor this one, should its look fail).
 */
export async function takeStartsInDoubt(knex: Knex, doubtSeconds: number, limit: number): Promise<StartInDoubt[]> {
  const rows = await runSql<{ id: string; workflow_id: string }>(
    knex,
    prepared(
      'take-starts-in-doubt',
      sql`UPDATE webhook_events SET start_checked_at = now()
           WHERE id IN (SELECT id FROM webhook_events
                         WHERE ${IN_DOUBT(doubtSeconds)}
                           AND (start_checked_at IS NULL OR start_checked_at < now() -
                             make_interval(secs => ${doubtSeconds}))
                         ORDER BY created_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
             AND run_id IS NULL
       RETURNING id, workflow_id`,
    ),
  );
  return rows.map((row) => ({ webhookId: row.id, workflowId: row.workflow_id }));
}

/** Starts in doubt across the deployment (the in-doubt gauge). */
export async function countStartsInDoubt(knex: Knex, doubtSeconds: number): Promise<number> {
  const [row] = await runSql<{ n: number }>(
    knex,
    prepared(
      'count-starts-in-doubt',
      sql`SELECT count(*)::int AS n FROM webhook_events WHERE ${IN_DOUBT(doubtSeconds)}`,
    ),
  );
  return row.n;
}
