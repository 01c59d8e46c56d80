import type { Knex } from 'knex';

/**
 * Indexes of the partner API's read side (docs/partners.md, "The partner API"):
 * - `webhook_events_company_keyset` (company_id, created_at, id): the partner's delivery list reads each granted
 *   company's newest rows as one index range in the keyset's own order (created_at DESC, id DESC), starting at the
 *   page's position, so a page reads about `limit` entries per company at 3 M webhooks as at 30 k. It replaces
 *   `webhook_events_company_idx` (company_id, created_at), of migration 001, whose every use it serves (a leading
 *   prefix), so a webhook's row costs no more index writes than before.
 * - `webhook_attempts_started` (started_at): the partner's health reads the attempts of the last hour and day, a
 *   range of this index, instead of every attempt.
 * Both tables grow by millions of rows, so CONCURRENTLY, as in migration 023: writes go on while each index is
 * built. That cannot run in a transaction, so this migration has none: a failed build leaves an INVALID index,
 * which the next run drops and builds again; the old index is dropped only once the new one is built.
 */
const INDEXES: ReadonlyArray<readonly [name: string, definition: string]> = [
  ['webhook_events_company_keyset', 'webhook_events (company_id, created_at, id)'],
  ['webhook_attempts_started', 'webhook_attempts (started_at)'],
];
const REPLACED = ['webhook_events_company_idx', 'webhook_events (company_id, created_at)'] as const;

export const config = { transaction: false };

export async function up(knex: Knex): Promise<void> {
  for (const [name, definition] of INDEXES) {
    await knex.raw(`DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
    await knex.raw(`CREATE INDEX CONCURRENTLY ${name} ON ${definition}`);
  }
  await knex.raw(`DROP INDEX CONCURRENTLY IF EXISTS ${REPLACED[0]}`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DROP INDEX CONCURRENTLY IF EXISTS ${REPLACED[0]}`);
  await knex.raw(`CREATE INDEX CONCURRENTLY ${REPLACED[0]} ON ${REPLACED[1]}`);
  for (const [name] of [...INDEXES].reverse()) await knex.raw(`DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
}
