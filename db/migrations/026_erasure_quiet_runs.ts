import type { Knex } from 'knex';

/**
 * An erasure's workflow id is gone only when Temporal serves none of its runs twice, a pause apart
 * (docs/decisions.md, "A workflow id is gone after a second quiet look"): `erasure_runs.quiet_at` is when a sweep
 * first found it quiet (no describe, list or history read returned a run). A nullable column with no default:
 * PostgreSQL adds it without rewriting the table.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE erasure_runs ADD COLUMN quiet_at timestamptz');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE erasure_runs DROP COLUMN quiet_at');
}
