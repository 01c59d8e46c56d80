import type { Knex } from 'knex';

/**
 * The number of SCIM groups as one counter row, kept exact by statement-level triggers, so an unfiltered
 * `GET /scim/v2/Groups` answers totalResults without counting the whole table on every request.
 * Transition tables make a bulk import cost one counter update per statement, not one per row.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE scim_group_total (
      singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
      total      bigint NOT NULL CHECK (total >= 0)
    );
    INSERT INTO scim_group_total (total) SELECT count(*) FROM scim_groups;

    CREATE FUNCTION scim_group_total_add() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE scim_group_total SET total = total + (SELECT count(*) FROM inserted);
      RETURN NULL;
    END $$;
    CREATE FUNCTION scim_group_total_subtract() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE scim_group_total SET total = total - (SELECT count(*) FROM deleted);
      RETURN NULL;
    END $$;
    CREATE FUNCTION scim_group_total_reset() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE scim_group_total SET total = 0;
      RETURN NULL;
    END $$;

    CREATE TRIGGER scim_group_total_insert AFTER INSERT ON scim_groups
      REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION scim_group_total_add();
    CREATE TRIGGER scim_group_total_delete AFTER DELETE ON scim_groups
      REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION scim_group_total_subtract();
    CREATE TRIGGER scim_group_total_truncate AFTER TRUNCATE ON scim_groups
      FOR EACH STATEMENT EXECUTE FUNCTION scim_group_total_reset();
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TRIGGER IF EXISTS scim_group_total_insert ON scim_groups;
    DROP TRIGGER IF EXISTS scim_group_total_delete ON scim_groups;
    DROP TRIGGER IF EXISTS scim_group_total_truncate ON scim_groups;
    DROP FUNCTION IF EXISTS scim_group_total_add(), scim_group_total_subtract(), scim_group_total_reset();
    DROP TABLE IF EXISTS scim_group_total;
  `);
}
