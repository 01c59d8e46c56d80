import type { Knex } from 'knex';

/**
 * What the operations need from webhook rows:
 * - a redelivery is a row of its own that points at the original (`redelivery_of`) and sends its event again.
 *   event_id stays the upstream idempotency key of originals only; `redelivery_key` makes a bulk redeliver
 *   idempotent per original.
 * - an attempt an operator pushed with retry-now is recorded as `manual`.
 * - the delivery log pages newest first over (created_at, id).
 * Literals are frozen here, as in every migration.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE webhook_events
      ADD COLUMN redelivery_of uuid REFERENCES webhook_events (id) ON DELETE CASCADE,
      ADD COLUMN redelivery_key text,
      ADD CONSTRAINT webhook_events_redelivery_check CHECK ((redelivery_of IS NULL) = (redelivery_key IS NULL));
    ALTER TABLE webhook_events DROP CONSTRAINT webhook_events_event_id_key;
    CREATE UNIQUE INDEX webhook_events_event_id_key ON webhook_events (event_id) WHERE redelivery_of IS NULL;
    CREATE UNIQUE INDEX webhook_events_redelivery_key ON webhook_events (redelivery_of, redelivery_key);
    CREATE INDEX webhook_events_created_idx ON webhook_events (created_at, id);
    ALTER TABLE webhook_attempts
      ADD COLUMN trigger text NOT NULL DEFAULT 'schedule' CHECK (trigger IN ('schedule', 'manual'));
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE webhook_attempts DROP COLUMN trigger;
    DELETE FROM webhook_events WHERE redelivery_of IS NOT NULL;
    DROP INDEX webhook_events_created_idx;
    DROP INDEX webhook_events_redelivery_key;
    DROP INDEX webhook_events_event_id_key;
    ALTER TABLE webhook_events ADD CONSTRAINT webhook_events_event_id_key UNIQUE (event_id);
    ALTER TABLE webhook_events DROP CONSTRAINT webhook_events_redelivery_check, DROP COLUMN redelivery_key,
      DROP COLUMN redelivery_of;
  `);
}
