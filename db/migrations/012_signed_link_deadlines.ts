import type { Knex } from 'knex';

/**
 * Signed links in an event expire a fixed time after the service accepted it (spec section 8), so each row
 * keeps its acceptance time: a redelivery keeps its original's, since it sends the same links. Each attempt
 * records which kinds of link were past their deadline when it was sent. Literals are frozen here.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE webhook_events ADD COLUMN accepted_at timestamptz NOT NULL DEFAULT now();
    UPDATE webhook_events SET accepted_at = created_at WHERE redelivery_of IS NULL;
    UPDATE webhook_events r SET accepted_at = o.created_at FROM webhook_events o WHERE r.redelivery_of = o.id;
    ALTER TABLE webhook_attempts
      ADD COLUMN expired_links text[] NOT NULL DEFAULT '{}'
        CHECK (expired_links <@ ARRAY['files', 'file_answers']::text[]);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE webhook_attempts DROP COLUMN expired_links;
    ALTER TABLE webhook_events DROP COLUMN accepted_at;
  `);
}
