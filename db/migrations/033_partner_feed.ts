import type { Knex } from 'knex';

/**
 * The partner's pull feed (GET /partner/v1/events, docs/partners.md "The feed"; docs/decisions.md says why):
 * - `feed_xid`: the id of the transaction that inserted the row (`pg_current_xact_id()`). A reader sees only rows
 *   below the oldest transaction still running (`pg_snapshot_xmin(pg_current_snapshot())`), in (feed_xid, id)
 *   order, so a row can never commit behind a cursor that was already read. Rows from before this migration read
 *   as transaction 0: they come first, in id order. Added with its constant default and the default switched in one
 *   statement, so no row is written between the two and no existing row is rewritten.
 * - `webhook_events_feed` (company_id, feed_xid, id): one index range per granted company, in the feed's order,
 *   built CONCURRENTLY (as migration 031) so writes go on; this migration has no transaction for that.
 * - A statement-level trigger notifies `partner_feed` after each INSERT, delivered when its transaction commits:
 *   the long poll's one wake-up path (one LISTEN connection per api process).
 * - `partner_feed_consumers`: a reader's stored position, per app and name (Svix's consumer offset).
 */
export const config = { transaction: false };

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE webhook_events
      ADD COLUMN IF NOT EXISTS feed_xid xid8 NOT NULL DEFAULT '0',
      ALTER COLUMN feed_xid SET DEFAULT pg_current_xact_id()
  `);
  await knex.raw(`
    CREATE OR REPLACE FUNCTION partner_feed_notify() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('partner_feed', '');
      RETURN NULL;
    END
    $$
  `);
  await knex.raw('DROP TRIGGER IF EXISTS webhook_events_feed_notify ON webhook_events');
  await knex.raw(`
    CREATE TRIGGER webhook_events_feed_notify AFTER INSERT ON webhook_events
      FOR EACH STATEMENT EXECUTE FUNCTION partner_feed_notify()
  `);
  await knex.raw(`
    CREATE TABLE IF NOT EXISTS partner_feed_consumers (
      app_id      text NOT NULL REFERENCES partner_apps (app_id),
      name        text NOT NULL,
      position    text NOT NULL,
      updated_at  timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (app_id, name)
    )
  `);
  await knex.raw('DROP INDEX CONCURRENTLY IF EXISTS webhook_events_feed');
  await knex.raw('CREATE INDEX CONCURRENTLY webhook_events_feed ON webhook_events (company_id, feed_xid, id)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX CONCURRENTLY IF EXISTS webhook_events_feed');
  await knex.raw('DROP TABLE IF EXISTS partner_feed_consumers');
  await knex.raw('DROP TRIGGER IF EXISTS webhook_events_feed_notify ON webhook_events');
  await knex.raw('DROP FUNCTION IF EXISTS partner_feed_notify()');
  await knex.raw('ALTER TABLE webhook_events DROP COLUMN IF EXISTS feed_xid');
}
