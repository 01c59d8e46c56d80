import type { Knex } from 'knex';

/**
 * Indexes that keep four queries flat as a year of webhooks piles up (docs/operations.md, "Indexes on a large
 * table"; issue 49's measurements at 3 M webhooks):
 * - the worker's start-up report of texts resting under keys no longer listed reads the distinct key ids of the
 *   bodies and excerpts that rest, and counts only the rows under unlisted keys or in clear
 *   (store/personal-data/sealed-keys.ts), instead of counting every attempt;
 * - the delivery log filtered by company and status;
 * - a bulk redelivery's test for an original already redelivered under its key: redeliveries only, led by the
 *   key, so the anti-join reads the few rows of that key instead of the whole (redelivery_of, key) index;
 * - the audit list filtered by action.
 * CONCURRENTLY, so that a deployment with millions of rows keeps writing while each is built. That cannot run in
 * a transaction, so this migration has none: a failed build leaves an INVALID index, which the next run drops and
 * builds again.
 */
const INDEXES: ReadonlyArray<readonly [name: string, definition: string]> = [
  [
    'webhook_attempts_resting_key',
    'webhook_attempts (response_body_key_id) WHERE response_body IS NOT NULL OR response_body_sealed IS NOT NULL',
  ],
  ['webhook_events_resting_key', 'webhook_events (body_key_id) WHERE body IS NOT NULL OR body_sealed IS NOT NULL'],
  ['webhook_events_company_status', 'webhook_events (company_id, status, created_at, id)'],
  [
    'webhook_events_redeliveries',
    'webhook_events (redelivery_key, redelivery_of) WHERE redelivery_key IS NOT NULL AND run_id IS NOT NULL',
  ],
  ['audit_events_action', 'audit_events (action, at, id)'],
];

export const config = { transaction: false };

export async function up(knex: Knex): Promise<void> {
  for (const [name, definition] of INDEXES) {
    await knex.raw(`DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
    await knex.raw(`CREATE INDEX CONCURRENTLY ${name} ON ${definition}`);
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const [name] of [...INDEXES].reverse()) await knex.raw(`DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
}
