import type { Knex } from 'knex';

/**
 * PostgreSQL keeps statistics for an index expression only once the table is analyzed after the index
 * exists, and autovacuum analyzes again only after many row changes. 005 and 010 built folded-expression
 * indexes on tables that may already hold data, and without those statistics the planner guessed: on
 * 50,000 users, `userName eq` walked the primary key in `ORDER BY id LIMIT` order (about 20 ms) instead of
 * using users_scim_user_name_folded_idx (under 0.1 ms). ANALYZE reads a sample, so it stays quick on big tables.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ANALYZE users, scim_groups, scim_group_members');
}

/** Statistics are not schema: nothing to undo. */
export async function down(): Promise<void> {}
