import type { Knex } from 'knex';

/**
 * Case-insensitive SCIM matching that gives the same answers on PostgreSQL 14 to 18: lower() under an ICU
 * collation (`und`, Unicode case mapping for every script, not ASCII only), re-collated to "C" so equality,
 * LIKE and ordering compare code points and a btree serves prefixes. The expressions must match
 * api/scim/engine/sql-text.ts `folded` exactly. Databases migrated when 002 built these indexes on pg_c_utf8
 * (17+ only) get them replaced.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE COLLATION IF NOT EXISTS pis_fold (provider = icu, locale = 'und');
    DROP INDEX IF EXISTS scim_groups_display_name_folded_idx, scim_groups_display_name_trgm_idx,
      scim_group_members_value_folded_idx;
    CREATE INDEX scim_groups_display_name_folded_idx ON scim_groups
      ((lower(display_name COLLATE pis_fold) COLLATE "C"));
    CREATE INDEX scim_groups_display_name_trgm_idx ON scim_groups
      USING gin ((lower(display_name COLLATE pis_fold) COLLATE "C") gin_trgm_ops);
    -- Membership lookups: members[value eq ...], members eq ...
    CREATE INDEX scim_group_members_value_folded_idx ON scim_group_members
      ((lower(value COLLATE pis_fold) COLLATE "C"), group_id);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP INDEX IF EXISTS scim_groups_display_name_folded_idx, scim_groups_display_name_trgm_idx,
      scim_group_members_value_folded_idx;
    DROP COLLATION IF EXISTS pis_fold;
  `);
}
