import type { Knex } from 'knex';

/**
 * Ordering lanes' keys rest like bodies and excerpts (store/personal-data/sealed-keys.ts,
 * SEALABLE_TEXT_COLUMNS): the worker's start-up report finds the key ids they rest under by skipping through
 * this index, a few probes per key id, and counts only the lanes under unlisted keys or in clear. A deployment
 * has a lane per ordered entity, so CONCURRENTLY, as in migration 023: no transaction, and a failed build's
 * INVALID index is dropped and built again.
 */
const NAME = 'ordering_lanes_resting_key';

export const config = { transaction: false };

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`DROP INDEX CONCURRENTLY IF EXISTS ${NAME}`);
  await knex.raw(
    `CREATE INDEX CONCURRENTLY ${NAME} ON ordering_lanes (key_key_id)
      WHERE key_text IS NOT NULL OR key_sealed IS NOT NULL`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DROP INDEX CONCURRENTLY IF EXISTS ${NAME}`);
}
