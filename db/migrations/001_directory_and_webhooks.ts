import type { Knex } from 'knex';

// Literals are frozen here: lib/vocabulary.ts is the living list, and widening a CHECK takes a new migration.

/** The whole data model: directory (companies, jobs, users, memberships, SCIM groups), partner apps, webhooks. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE companies (
      id           text PRIMARY KEY CHECK (id <> ''),
      internal_id  bigint UNIQUE,
      name         text NOT NULL,
      has_config   boolean NOT NULL DEFAULT false,
      settings     jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(settings) = 'object'),
      created_at   timestamptz NOT NULL DEFAULT now(),
      updated_at   timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE jobs (
      id                 text PRIMARY KEY CHECK (id <> ''),
      company_id         text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
      internal_id        bigint UNIQUE,
      internal_reference text,
      title              text NOT NULL,
      from_date          date,
      to_date            date,
      created_at         timestamptz NOT NULL DEFAULT now(),
      updated_at         timestamptz NOT NULL DEFAULT now(),
      CHECK (from_date IS NULL OR to_date IS NULL OR from_date <= to_date)
    );
    CREATE INDEX jobs_company_id_idx ON jobs (company_id);

    -- emails holds every address, the primary one first.
    CREATE TABLE users (
      id              bigint PRIMARY KEY CHECK (id > 0),
      first_name      text NOT NULL,
      last_name       text NOT NULL,
      email_primary   text NOT NULL,
      emails          text[] NOT NULL,
      is_agency_user  boolean NOT NULL DEFAULT false,
      created_at      timestamptz NOT NULL DEFAULT now(),
      updated_at      timestamptz NOT NULL DEFAULT now(),
      CHECK (cardinality(emails) >= 1 AND emails[1] = email_primary)
    );

    -- The primary key (company_id, user_id) serves the company listing in user id order.
    CREATE TABLE company_users (
      company_id  text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
      user_id     bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      role        text NOT NULL CHECK (role IN ('admin', 'owner', 'manager', 'member')),
      PRIMARY KEY (company_id, user_id)
    );
    CREATE INDEX company_users_user_id_idx ON company_users (user_id);
    -- Admins and owners see every job of their company; the job listing reads them through this index.
    CREATE INDEX company_users_admins_idx ON company_users (company_id, user_id) WHERE role IN ('admin', 'owner');

    CREATE TABLE job_users (
      job_id   text NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
      user_id  bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      role     text NOT NULL CHECK (role IN ('job_owner', 'collaborator', 'viewer', 'job_interviewer')),
      PRIMARY KEY (job_id, user_id)
    );
    CREATE INDEX job_users_user_id_idx ON job_users (user_id);

    CREATE TABLE scim_groups (
      id             uuid PRIMARY KEY,
      external_id    text,
      display_name   text NOT NULL,
      created        timestamptz NOT NULL DEFAULT now(),
      last_modified  timestamptz NOT NULL DEFAULT now(),
      version        integer NOT NULL DEFAULT 1
    );

    -- A member is a user or a group; value is the SCIM member value (user id or group id as text).
    CREATE TABLE scim_group_members (
      group_id         uuid NOT NULL REFERENCES scim_groups (id) ON DELETE CASCADE,
      member_user_id   bigint REFERENCES users (id) ON DELETE CASCADE,
      member_group_id  uuid REFERENCES scim_groups (id) ON DELETE CASCADE,
      type             text GENERATED ALWAYS AS (CASE WHEN member_user_id IS NOT NULL THEN 'User' ELSE 'Group' END)
        STORED,
      value            text GENERATED ALWAYS AS (COALESCE(member_user_id::text, member_group_id::text)) STORED,
      CHECK (num_nonnulls(member_user_id, member_group_id) = 1),
      CHECK (member_group_id IS DISTINCT FROM group_id)
    );
    CREATE UNIQUE INDEX scim_group_members_user_uq ON scim_group_members (group_id, member_user_id)
      WHERE member_user_id IS NOT NULL;
    CREATE UNIQUE INDEX scim_group_members_group_uq ON scim_group_members (group_id, member_group_id)
      WHERE member_group_id IS NOT NULL;
    CREATE INDEX scim_group_members_user_idx ON scim_group_members (member_user_id);
    CREATE INDEX scim_group_members_member_group_idx ON scim_group_members (member_group_id);

    -- key_hash is sha256(salt || key); the key itself is never stored.
    CREATE TABLE partner_apps (
      app_id      text PRIMARY KEY CHECK (app_id ~ '^[A-Za-z0-9._-]{1,100}$'),
      name        text NOT NULL,
      key_salt    bytea NOT NULL,
      key_hash    bytea NOT NULL,
      created_at  timestamptz NOT NULL DEFAULT now(),
      revoked_at  timestamptz
    );

    CREATE TABLE partner_app_companies (
      app_id      text NOT NULL REFERENCES partner_apps (app_id) ON DELETE CASCADE,
      company_id  text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
      PRIMARY KEY (app_id, company_id)
    );
    CREATE INDEX partner_app_companies_company_idx ON partner_app_companies (company_id);

    -- One row per webhook; event_id is the upstream idempotency key. company_id is not a foreign key:
    -- a webhook may concern a company the directory has not imported yet.
    CREATE TABLE webhook_events (
      id           uuid PRIMARY KEY,
      event_id     text NOT NULL UNIQUE CHECK (event_id <> ''),
      event_type   text NOT NULL CHECK (event_type IN ('company', 'job', 'candidate')),
      action       text NOT NULL CHECK (action IN ('new', 'update', 'dynamic_update', 'signup')),
      company_id   text,
      payload      jsonb NOT NULL,
      workflow_id  text UNIQUE,
      run_id       text,
      status       text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
      is_test      boolean NOT NULL DEFAULT false,
      created_at   timestamptz NOT NULL DEFAULT now(),
      updated_at   timestamptz NOT NULL DEFAULT now(),
      finished_at  timestamptz
    );
    CREATE INDEX webhook_events_company_idx ON webhook_events (company_id, created_at);
    CREATE INDEX webhook_events_status_idx ON webhook_events (status, created_at);

    CREATE TABLE webhook_attempts (
      webhook_id     uuid NOT NULL REFERENCES webhook_events (id) ON DELETE CASCADE,
      attempt        smallint NOT NULL CHECK (attempt BETWEEN 1 AND 4),
      scheduled_at   timestamptz NOT NULL,
      started_at     timestamptz NOT NULL,
      duration_ms    integer NOT NULL CHECK (duration_ms >= 0),
      http_status    smallint,
      error_class    text CHECK (error_class IN ('timeout', 'connection_refused', 'dns', 'tls', 'reset', 'other')),
      error_message  text,
      response_body  text CHECK (octet_length(response_body) <= 4096),
      succeeded      boolean NOT NULL,
      is_test        boolean NOT NULL DEFAULT false,
      recorded_at    timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (webhook_id, attempt),
      CHECK (http_status IS NOT NULL OR error_class IS NOT NULL)
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TABLE IF EXISTS webhook_attempts, webhook_events, partner_app_companies, partner_apps,
      scim_group_members, scim_groups, job_users, company_users, users, jobs, companies CASCADE;
  `);
}
