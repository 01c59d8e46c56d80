import type { Knex } from 'knex';

/**
 * Every attempt and redelivery of a webhook must send the same bytes (signatures are computed over them).
 * jsonb re-orders keys, so the event is kept as the exact JSON body in a `json` column, which stores text.
 * Rows written before this get the body their workflow sends: event_type, action, then data.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE webhook_events ADD COLUMN body json;
    UPDATE webhook_events SET body = json_build_object('event_type', event_type, 'action', action, 'data', payload);
    ALTER TABLE webhook_events ALTER COLUMN body SET NOT NULL, DROP COLUMN payload;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE webhook_events ADD COLUMN payload jsonb;
    UPDATE webhook_events SET payload = (body -> 'data')::jsonb;
    ALTER TABLE webhook_events ALTER COLUMN payload SET NOT NULL, DROP COLUMN body;
  `);
}
