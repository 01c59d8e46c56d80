import type { Knex } from 'knex';

/**
 * A delivery an operator cancelled (the workflow records it) or terminated (the status URL records it when
 * it finds the run closed) must not stay "pending". Literals are frozen here: later vocabulary changes get
 * migrations of their own.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE webhook_events DROP CONSTRAINT webhook_events_status_check;
    ALTER TABLE webhook_events ADD CONSTRAINT webhook_events_status_check
      CHECK (status IN ('pending', 'delivered', 'failed', 'cancelled', 'terminated'));
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    UPDATE webhook_events SET status = 'failed' WHERE status IN ('cancelled', 'terminated');
    ALTER TABLE webhook_events DROP CONSTRAINT webhook_events_status_check;
    ALTER TABLE webhook_events ADD CONSTRAINT webhook_events_status_check
      CHECK (status IN ('pending', 'delivered', 'failed'));
  `);
}
