import type { Knex } from 'knex';

/**
 * Indexes for the filters identity providers send on SCIM Users, case-folded like 005 (userName and
 * emails are caseExact=false):
 * - `userName eq`, `sw` and sorting: btree on the folded primary address, the expression
 *   api/scim/engine/sql-text.ts `folded` writes;
 * - `emails.value eq`, `emails[value eq …]`: GIN on the folded array of every address. An index cannot see
 *   into the EXISTS over unnest(emails), so the compiler adds `pis_fold_array(u.emails) @> ARRAY[…]` before
 *   it (api/scim/users/emails.ts). The function exists because an index expression cannot hold a subquery.
 * - `groups.value eq` needs nothing new: scim_group_members_user_uq (group_id, member_user_id) serves it.
 * And, as 003 did for groups, `scim_user_total`: the number of users kept exact by statement-level
 * triggers, so an unfiltered `GET /Users` page does not count the whole table.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE FUNCTION pis_fold_array(text[]) RETURNS text[]
      LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
      -- CREATE INDEX (PostgreSQL 17+) runs index expressions with a safe search_path that lacks pis_fold.
      SET search_path FROM CURRENT
      AS $$ SELECT ARRAY(SELECT lower(e COLLATE pis_fold) COLLATE "C" FROM unnest($1) AS e) $$;
    CREATE INDEX users_scim_user_name_folded_idx ON users ((lower(email_primary COLLATE pis_fold) COLLATE "C"));
    CREATE INDEX users_scim_emails_folded_idx ON users USING gin (pis_fold_array(emails));

    CREATE TABLE scim_user_total (
      singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
      total      bigint NOT NULL CHECK (total >= 0)
    );
    INSERT INTO scim_user_total (total) SELECT count(*) FROM users;
    CREATE FUNCTION scim_user_total_add() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE scim_user_total SET total = total + (SELECT count(*) FROM inserted);
      RETURN NULL;
    END $$;
    CREATE FUNCTION scim_user_total_subtract() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE scim_user_total SET total = total - (SELECT count(*) FROM deleted);
      RETURN NULL;
    END $$;
    CREATE FUNCTION scim_user_total_reset() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE scim_user_total SET total = 0;
      RETURN NULL;
    END $$;
    CREATE TRIGGER scim_user_total_insert AFTER INSERT ON users
      REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION scim_user_total_add();
    CREATE TRIGGER scim_user_total_delete AFTER DELETE ON users
      REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION scim_user_total_subtract();
    CREATE TRIGGER scim_user_total_truncate AFTER TRUNCATE ON users
      FOR EACH STATEMENT EXECUTE FUNCTION scim_user_total_reset();
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TRIGGER IF EXISTS scim_user_total_insert ON users;
    DROP TRIGGER IF EXISTS scim_user_total_delete ON users;
    DROP TRIGGER IF EXISTS scim_user_total_truncate ON users;
    DROP FUNCTION IF EXISTS scim_user_total_add(), scim_user_total_subtract(), scim_user_total_reset();
    DROP TABLE IF EXISTS scim_user_total;
    DROP INDEX IF EXISTS users_scim_user_name_folded_idx, users_scim_emails_folded_idx;
    DROP FUNCTION IF EXISTS pis_fold_array(text[]);
  `);
}
