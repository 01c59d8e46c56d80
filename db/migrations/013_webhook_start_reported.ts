import type { Knex } from 'knex';

/**
 * Whether a call has answered 202 for the webhook: exactly one does. The run id alone could not say so, since
 * the worker's claim writes it too, and with eager start it may do so before the starting call records it.
 * Rows with a run were reported already. Literals are frozen here.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE webhook_events ADD COLUMN start_reported boolean NOT NULL DEFAULT false;
    UPDATE webhook_events SET start_reported = true WHERE run_id IS NOT NULL;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE webhook_events DROP COLUMN start_reported');
}
