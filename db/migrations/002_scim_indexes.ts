import type { Knex } from 'knex';

/**
 * Indexes for the SCIM filter pushdown (api/scim/engine/filter/compile-sql.ts). pg_trgm serves `co` and `ew`
 * (LIKE with a leading wildcard); it is a trusted extension, so the database owner may create it. The
 * case-insensitive indexes are migration 005's: this one once built them on the pg_c_utf8 collation, which
 * PostgreSQL 14 to 16 lack, and 005 replaces them wherever they exist.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
    CREATE INDEX scim_groups_external_id_idx ON scim_groups ((NULLIF(external_id, '')));
    CREATE INDEX scim_groups_last_modified_idx ON scim_groups (last_modified);
    -- Loading a page's members.
    CREATE INDEX scim_group_members_group_idx ON scim_group_members (group_id);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP INDEX IF EXISTS scim_groups_external_id_idx, scim_groups_last_modified_idx, scim_group_members_group_idx;
    DROP EXTENSION IF EXISTS pg_trgm;
  `);
}
