import type { Knex } from 'knex';

/**
 * Starts in doubt (docs/ingestion.md): a row whose start call ended without an answer has a workflow id and no
 * run. The worker looks such rows up once they are old enough; `start_checked_at` marks the one worker that
 * took a row for a look, and the partial index keeps the search to those rows (a handful, not the table).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE webhook_events ADD COLUMN start_checked_at timestamptz;
    CREATE INDEX webhook_events_without_run ON webhook_events (created_at) WHERE run_id IS NULL
      AND workflow_id IS NOT NULL;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP INDEX webhook_events_without_run;
    ALTER TABLE webhook_events DROP COLUMN start_checked_at;
  `);
}
