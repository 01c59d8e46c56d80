import type { Knex } from 'knex';

/**
 * An attempt is claimed in the webhook's row before it is POSTed. The claim outlives the worker that made it,
 * so a try that runs again after a lost worker (a local activity is re-run on replay) finds the claim and
 * does not POST that attempt a second time.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE webhook_events ADD COLUMN claimed_attempt smallint NOT NULL DEFAULT 0
      CHECK (claimed_attempt BETWEEN 0 AND 4);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE webhook_events DROP COLUMN claimed_attempt');
}
