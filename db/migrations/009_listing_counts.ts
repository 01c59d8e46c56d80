import type { Knex } from 'knex';

/**
 * The `count` of the REST user listings, kept exact by statement-level triggers (transition tables, as in
 * 003), so a page no longer counts up to 100k memberships on every request.
 *
 * - company_listing_counts: company_users rows per company (the primary key makes them distinct users).
 *   Kept by deltas: a statement adds its inserted rows and subtracts its deleted ones. Deltas commute, so
 *   concurrent writers need nothing but the row lock of the UPDATE, at any isolation level.
 * - job_listing_counts: |admins and owners of the job's company ∪ the job's job_users|. A delta here
 *   would depend on the other table's state, which is wrong when both change before the triggers fire
 *   (a user delete cascades into both) or when another transaction changes it concurrently. So affected
 *   jobs are recounted from the tables (two small indexed reads each) after locking their company's
 *   counter row, the row every company_users delta updates anyway. That one lock per company serialises
 *   every write that can change a count of the company or its jobs (a shared lock for job-only writes
 *   would let two of them deadlock when each then writes company_users in the same transaction).
 *   Under READ COMMITTED each statement of a trigger takes a fresh snapshot, so a recount made after the
 *   lock sees every write serialised before it; under REPEATABLE READ or SERIALIZABLE the lock itself fails
 *   with a serialisation error when a concurrent writer got there first, so no stale count is written.
 * Counter rows are created with their company or job and go with it (ON DELETE CASCADE).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE company_listing_counts (
      company_id  text PRIMARY KEY REFERENCES companies (id) ON DELETE CASCADE,
      total       bigint NOT NULL CHECK (total >= 0)
    );
    CREATE TABLE job_listing_counts (
      job_id  text PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
      total   bigint NOT NULL CHECK (total >= 0)
    );

    -- The job listing's users, counted: the same union as api/listings/members-query.ts.
    CREATE FUNCTION job_listing_total(p_job_id text, p_company_id text) RETURNS bigint LANGUAGE sql STABLE AS $$
      SELECT count(*) FROM (
        SELECT cu.user_id FROM company_users cu WHERE cu.company_id = p_company_id AND cu.role IN ('admin', 'owner')
        UNION
        SELECT ju.user_id FROM job_users ju WHERE ju.job_id = p_job_id
      ) u
    $$;

    -- Recounts the given jobs under their companies' locks. Separate statements on purpose: the recount
    -- must take its snapshot after the locks are granted.
    CREATE FUNCTION job_listing_recount(p_job_ids text[]) RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
      IF cardinality(p_job_ids) = 0 THEN RETURN; END IF;
      PERFORM 1 FROM company_listing_counts c
        WHERE c.company_id IN (SELECT j.company_id FROM jobs j WHERE j.id = ANY (p_job_ids))
        ORDER BY c.company_id FOR NO KEY UPDATE;
      UPDATE job_listing_counts jc SET total = job_listing_total(j.id, j.company_id)
        FROM jobs j WHERE j.id = jc.job_id AND jc.job_id = ANY (p_job_ids);
    END $$;

    CREATE FUNCTION company_listing_counts_open() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO company_listing_counts (company_id, total) SELECT id, 0 FROM inserted ORDER BY id
        ON CONFLICT DO NOTHING;
      RETURN NULL;
    END $$;

    CREATE FUNCTION job_listing_counts_open() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO job_listing_counts (job_id, total) SELECT id, 0 FROM inserted ORDER BY id ON CONFLICT DO NOTHING;
      PERFORM job_listing_recount(ARRAY(SELECT id FROM inserted));
      RETURN NULL;
    END $$;

    -- A job moved to another company lists that company's admins.
    CREATE FUNCTION job_listing_counts_moved() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM job_listing_recount(ARRAY(
        SELECT n.id FROM after_rows n JOIN before_rows o ON o.id = n.id WHERE o.company_id <> n.company_id));
      RETURN NULL;
    END $$;

    -- Applies a company_users statement: per-company deltas, then a recount of every job of each company
    -- whose admin/owner set changed. The locks come first and in key order, so two bulk writers cannot
    -- deadlock on them; they are the same locks job_listing_recount takes.
    CREATE FUNCTION company_listing_apply(p_company_ids text[], p_deltas bigint[], p_admin_changed text[])
      RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM 1 FROM company_listing_counts c
        WHERE c.company_id = ANY (p_company_ids) OR c.company_id = ANY (p_admin_changed)
        ORDER BY c.company_id FOR NO KEY UPDATE;
      UPDATE company_listing_counts c SET total = c.total + d.delta
        FROM unnest(p_company_ids, p_deltas) AS d (company_id, delta)
        WHERE c.company_id = d.company_id AND d.delta <> 0;
      IF cardinality(p_admin_changed) > 0 THEN
        UPDATE job_listing_counts jc SET total = job_listing_total(j.id, j.company_id)
          FROM jobs j WHERE j.id = jc.job_id AND j.company_id = ANY (p_admin_changed);
      END IF;
    END $$;

    CREATE FUNCTION company_users_listing_insert() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM company_listing_apply(
        ARRAY(SELECT company_id FROM inserted GROUP BY company_id ORDER BY company_id),
        ARRAY(SELECT count(*) FROM inserted GROUP BY company_id ORDER BY company_id),
        ARRAY(SELECT DISTINCT company_id FROM inserted WHERE role IN ('admin', 'owner')));
      RETURN NULL;
    END $$;

    CREATE FUNCTION company_users_listing_delete() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM company_listing_apply(
        ARRAY(SELECT company_id FROM deleted GROUP BY company_id ORDER BY company_id),
        ARRAY(SELECT -count(*) FROM deleted GROUP BY company_id ORDER BY company_id),
        ARRAY(SELECT DISTINCT company_id FROM deleted WHERE role IN ('admin', 'owner')));
      RETURN NULL;
    END $$;

    -- Role changes (import upserts, promotions, demotions) and, for completeness, key changes.
    CREATE FUNCTION company_users_listing_update() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM company_listing_apply(
        ARRAY(SELECT company_id FROM (SELECT company_id, 1 AS d FROM after_rows UNION ALL SELECT company_id, -1
          FROM before_rows) m
              GROUP BY company_id ORDER BY company_id),
        ARRAY(SELECT sum(d) FROM (SELECT company_id, 1 AS d FROM after_rows UNION ALL SELECT company_id, -1
          FROM before_rows) m
              GROUP BY company_id ORDER BY company_id),
        ARRAY(SELECT DISTINCT company_id FROM (
          (SELECT company_id, user_id FROM after_rows WHERE role IN ('admin', 'owner')
           EXCEPT SELECT company_id, user_id FROM before_rows WHERE role IN ('admin', 'owner'))
          UNION
          (SELECT company_id, user_id FROM before_rows WHERE role IN ('admin', 'owner')
           EXCEPT SELECT company_id, user_id FROM after_rows WHERE role IN ('admin', 'owner'))) changed));
      RETURN NULL;
    END $$;

    CREATE FUNCTION job_users_listing_insert() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM job_listing_recount(ARRAY(SELECT DISTINCT job_id FROM inserted));
      RETURN NULL;
    END $$;

    CREATE FUNCTION job_users_listing_delete() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM job_listing_recount(ARRAY(SELECT DISTINCT job_id FROM deleted));
      RETURN NULL;
    END $$;

    -- A role change alone leaves the count as it is; only moved rows need a recount.
    CREATE FUNCTION job_users_listing_update() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM job_listing_recount(ARRAY(SELECT DISTINCT job_id FROM (
        (SELECT job_id, user_id FROM after_rows EXCEPT SELECT job_id, user_id FROM before_rows)
        UNION
        (SELECT job_id, user_id FROM before_rows EXCEPT SELECT job_id, user_id FROM after_rows)) changed));
      RETURN NULL;
    END $$;

    -- TRUNCATE holds an ACCESS EXCLUSIVE lock, so a plain recount of everything is safe; the backfill too.
    CREATE FUNCTION listing_counts_recount_all() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE company_listing_counts c SET total = (SELECT count(*) FROM company_users cu
        WHERE cu.company_id = c.company_id);
      UPDATE job_listing_counts jc SET total = job_listing_total(j.id, j.company_id) FROM jobs j WHERE j.id = jc.job_id;
      RETURN NULL;
    END $$;

    CREATE TRIGGER company_listing_counts_open AFTER INSERT ON companies
      REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION company_listing_counts_open();
    CREATE TRIGGER job_listing_counts_open AFTER INSERT ON jobs
      REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION job_listing_counts_open();
    CREATE TRIGGER job_listing_counts_moved AFTER UPDATE ON jobs
      REFERENCING OLD TABLE AS before_rows NEW TABLE AS after_rows FOR EACH STATEMENT
        EXECUTE FUNCTION job_listing_counts_moved();
    CREATE TRIGGER company_users_listing_insert AFTER INSERT ON company_users
      REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION company_users_listing_insert();
    CREATE TRIGGER company_users_listing_delete AFTER DELETE ON company_users
      REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION company_users_listing_delete();
    CREATE TRIGGER company_users_listing_update AFTER UPDATE ON company_users
      REFERENCING OLD TABLE AS before_rows NEW TABLE AS after_rows FOR EACH STATEMENT
        EXECUTE FUNCTION company_users_listing_update();
    CREATE TRIGGER company_users_listing_truncate AFTER TRUNCATE ON company_users
      FOR EACH STATEMENT EXECUTE FUNCTION listing_counts_recount_all();
    CREATE TRIGGER job_users_listing_insert AFTER INSERT ON job_users
      REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION job_users_listing_insert();
    CREATE TRIGGER job_users_listing_delete AFTER DELETE ON job_users
      REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION job_users_listing_delete();
    CREATE TRIGGER job_users_listing_update AFTER UPDATE ON job_users
      REFERENCING OLD TABLE AS before_rows NEW TABLE AS after_rows FOR EACH STATEMENT
        EXECUTE FUNCTION job_users_listing_update();
    CREATE TRIGGER job_users_listing_truncate AFTER TRUNCATE ON job_users
      FOR EACH STATEMENT EXECUTE FUNCTION listing_counts_recount_all();

    -- Backfill. The CREATE TRIGGERs above hold SHARE ROW EXCLUSIVE locks until the migration commits, so
    -- no write can slip between this count and the triggers.
    INSERT INTO company_listing_counts (company_id, total)
      SELECT c.id, (SELECT count(*) FROM company_users cu WHERE cu.company_id = c.id) FROM companies c;
    INSERT INTO job_listing_counts (job_id, total) SELECT j.id, job_listing_total(j.id, j.company_id) FROM jobs j;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TRIGGER IF EXISTS company_listing_counts_open ON companies;
    DROP TRIGGER IF EXISTS job_listing_counts_open ON jobs;
    DROP TRIGGER IF EXISTS job_listing_counts_moved ON jobs;
    DROP TRIGGER IF EXISTS company_users_listing_insert ON company_users;
    DROP TRIGGER IF EXISTS company_users_listing_delete ON company_users;
    DROP TRIGGER IF EXISTS company_users_listing_update ON company_users;
    DROP TRIGGER IF EXISTS company_users_listing_truncate ON company_users;
    DROP TRIGGER IF EXISTS job_users_listing_insert ON job_users;
    DROP TRIGGER IF EXISTS job_users_listing_delete ON job_users;
    DROP TRIGGER IF EXISTS job_users_listing_update ON job_users;
    DROP TRIGGER IF EXISTS job_users_listing_truncate ON job_users;
    DROP FUNCTION IF EXISTS company_listing_counts_open(), job_listing_counts_open(), job_listing_counts_moved(),
      company_users_listing_insert(), company_users_listing_delete(), company_users_listing_update(),
      job_users_listing_insert(), job_users_listing_delete(), job_users_listing_update(), listing_counts_recount_all(),
      company_listing_apply(text[], bigint[], text[]), job_listing_recount(text[]), job_listing_total(text, text);
    DROP TABLE IF EXISTS job_listing_counts, company_listing_counts;
  `);
}
