import type { Knex } from 'knex';

/**
 * A keyed deployment says so in PostgreSQL: `data_at_rest_settings` holds one row from the first start of a
 * process with PAYLOAD_ENCRYPTION_KEYS on, and from then on a process without keys writes no body or response
 * excerpt (docs/personal-data.md). The row is never removed by the service: the fact only goes from unset to set.
 * `keys reseal` walks webhook_attempts by its primary key and webhook_events by its id, so it needs no index.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE data_at_rest_settings (
      one             boolean PRIMARY KEY DEFAULT true CHECK (one),
      encrypted_since timestamptz NOT NULL DEFAULT now()
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE data_at_rest_settings');
}
