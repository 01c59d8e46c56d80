import type { Knex } from 'knex';

/**
 * Indexes for the SCIM filter pushdown (api/scim/filter/compile-sql.ts). The expressions must match
 * the compiled SQL exactly: case-insensitive attributes compare as lower(x COLLATE "pg_c_utf8").
 * pg_trgm serves `co` and `ew` (LIKE with a leading wildcard); it is a trusted extension, so the
 * database owner may create it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
    CREATE INDEX scim_groups_display_name_folded_idx ON scim_groups (lower(display_name COLLATE "pg_c_utf8"));
    CREATE INDEX scim_groups_display_name_trgm_idx ON scim_groups USING gin (lower(display_name COLLATE "pg_c_utf8") gin_trgm_ops);
    CREATE INDEX scim_groups_external_id_idx ON scim_groups ((NULLIF(external_id, '')));
    CREATE INDEX scim_groups_last_modified_idx ON scim_groups (last_modified);
    -- Membership lookups (members[value eq ...], members eq ...) and loading a page's members.
    CREATE INDEX scim_group_members_value_folded_idx ON scim_group_members (lower(value COLLATE "pg_c_utf8"), group_id);
    CREATE INDEX scim_group_members_group_idx ON scim_group_members (group_id);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP INDEX IF EXISTS scim_groups_display_name_folded_idx, scim_groups_display_name_trgm_idx,
      scim_groups_external_id_idx, scim_groups_last_modified_idx, scim_group_members_value_folded_idx,
      scim_group_members_group_idx;
    DROP EXTENSION IF EXISTS pg_trgm;
  `);
}
