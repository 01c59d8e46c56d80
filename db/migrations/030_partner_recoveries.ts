import type { Knex } from 'knex';

/**
 * A partner's recovery (POST /partner/v1/recoveries): the request, its state and progress, and the originals it
 * redelivers, numbered in the order they go out (`partner_recovery_items`, written once when it starts, so a dry
 * run, the real run and a retried batch all see the same list). One recovery runs per app at once: a partial
 * unique index says so without a lock. A recovery's redeliveries carry `redelivery_key` `recovery:<id>`; the
 * partial index on it serves its progress and its cancel. Literals are frozen here.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE partner_recoveries (
      id                   uuid PRIMARY KEY,
      app_id               text NOT NULL,
      request              jsonb NOT NULL,
      state                text NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'completed', 'cancelled')),
      total                integer NOT NULL CHECK (total >= 0),
      skipped              jsonb NOT NULL,
      next_item            integer NOT NULL DEFAULT 0,
      started              integer NOT NULL DEFAULT 0,
      cancelled            integer NOT NULL DEFAULT 0,
      created_at           timestamptz NOT NULL DEFAULT now(),
      cancel_requested_at  timestamptz,
      finished_at          timestamptz,
      CHECK ((state = 'running') = (finished_at IS NULL))
    );
    CREATE UNIQUE INDEX partner_recoveries_one_running ON partner_recoveries (app_id) WHERE state = 'running';
    CREATE TABLE partner_recovery_items (
      recovery_id  uuid NOT NULL REFERENCES partner_recoveries (id) ON DELETE CASCADE,
      item         integer NOT NULL,
      original_id  uuid NOT NULL,
      PRIMARY KEY (recovery_id, item)
    );
    CREATE INDEX webhook_events_recovery_key ON webhook_events (redelivery_key)
      WHERE redelivery_key LIKE 'recovery:%';
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP INDEX webhook_events_recovery_key;
    DROP TABLE partner_recovery_items;
    DROP TABLE partner_recoveries;
  `);
}
