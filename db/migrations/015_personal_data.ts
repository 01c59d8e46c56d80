import type { Knex } from 'knex';

/**
 * Candidates' personal data at rest, kept only as long as needed and erasable on request:
 * - a body and a response excerpt are stored in clear (`body`, `response_body`) or, with encryption keys, as
 *   AES-256-GCM ciphertext with the id of the key beside it (`*_sealed`, `*_key_id`), never both;
 * - the retention purge or an erasure removes them and says when and why (`payload_removed_at`, `_reason`); the
 *   row, its attempts and statuses stay in the delivery log until the log's own retention;
 * - `subject_keys` holds HMACs of the normalised subjects a body names (candidate id, e-mail addresses), so an
 *   erasure finds a person's webhooks without reading a body (NULL: written before the index, to backfill);
 * - a delivery an erasure cancelled says so (`status_reason`);
 * - the purges' partial indexes keep each bounded batch's scan small;
 * - `retention_runs` and `erasures` record what the purge and each erasure did, with no personal data;
 *   `erasure_runs` lists the Temporal runs an erasure deletes, so a crash resumes from the record.
 * Literals are frozen here, as in every migration.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE webhook_events
      ALTER COLUMN body DROP NOT NULL,
      ADD COLUMN body_sealed bytea,
      ADD COLUMN body_key_id text,
      ADD COLUMN payload_removed_at timestamptz,
      ADD COLUMN payload_removed_reason text CHECK (payload_removed_reason IN ('retention', 'erasure')),
      ADD COLUMN status_reason text CHECK (status_reason IN ('erasure')),
      ADD COLUMN subject_keys text[],
      ADD CONSTRAINT webhook_events_body_key_check CHECK ((body_sealed IS NULL) = (body_key_id IS NULL)),
      ADD CONSTRAINT webhook_events_body_check CHECK (
        CASE WHEN payload_removed_at IS NULL THEN (body IS NULL) <> (body_sealed IS NULL)
          ELSE body IS NULL AND body_sealed IS NULL END),
      ADD CONSTRAINT webhook_events_removed_check
        CHECK ((payload_removed_at IS NULL) = (payload_removed_reason IS NULL));
    ALTER TABLE webhook_attempts
      ADD COLUMN response_body_sealed bytea,
      ADD COLUMN response_body_key_id text,
      ADD CONSTRAINT webhook_attempts_response_key_check CHECK
        ((response_body_sealed IS NULL) = (response_body_key_id IS NULL)),
      ADD CONSTRAINT webhook_attempts_response_check CHECK (response_body IS NULL OR response_body_sealed IS NULL);

    CREATE INDEX webhook_events_subject_keys ON webhook_events USING gin (subject_keys);
    CREATE INDEX webhook_events_payload_due ON webhook_events (finished_at) WHERE payload_removed_at IS NULL
      AND finished_at IS NOT NULL;
    CREATE INDEX webhook_events_log_due ON webhook_events (finished_at) WHERE finished_at IS NOT NULL;
    CREATE INDEX webhook_events_body_key ON webhook_events (body_key_id) WHERE body_key_id IS NOT NULL;
    CREATE INDEX webhook_events_unindexed ON webhook_events (id) WHERE subject_keys IS NULL
      AND payload_removed_at IS NULL;

    CREATE TABLE retention_runs (
      id             bigserial PRIMARY KEY,
      task_queue     text NOT NULL,
      trigger        text NOT NULL CHECK (trigger IN ('schedule', 'manual')),
      started_at     timestamptz NOT NULL DEFAULT now(),
      finished_at    timestamptz,
      payload_cutoff timestamptz NOT NULL,
      log_cutoff     timestamptz NOT NULL,
      bodies_removed bigint NOT NULL DEFAULT 0 CHECK (bodies_removed >= 0),
      rows_deleted   bigint NOT NULL DEFAULT 0 CHECK (rows_deleted >= 0)
    );
    CREATE INDEX retention_runs_started ON retention_runs (task_queue, started_at DESC);

    CREATE TABLE erasures (
      id                   uuid PRIMARY KEY,
      subject_kind         text NOT NULL CHECK (subject_kind IN ('candidate_id', 'email')),
      subject_key          text NOT NULL,
      company_id           text,
      requested_by         text NOT NULL,
      requested_at         timestamptz NOT NULL DEFAULT now(),
      status               text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'completed')),
      webhooks_found       integer,
      deliveries_cancelled integer,
      bodies_removed       integer,
      runs_deleted         integer,
      completed_at         timestamptz,
      updated_at           timestamptz NOT NULL DEFAULT now(),
      CHECK ((status = 'completed') = (completed_at IS NOT NULL))
    );
    CREATE INDEX erasures_subject ON erasures (subject_key, requested_at);

    CREATE TABLE erasure_runs (
      erasure_id  uuid NOT NULL REFERENCES erasures (id) ON DELETE CASCADE,
      workflow_id text NOT NULL,
      run_id      text NOT NULL DEFAULT '',
      webhook_id  uuid,
      deleted_at  timestamptz,
      gone_at     timestamptz,
      PRIMARY KEY (erasure_id, workflow_id, run_id)
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TABLE erasure_runs, erasures, retention_runs;
    DROP INDEX webhook_events_subject_keys, webhook_events_payload_due, webhook_events_log_due, webhook_events_body_key,
      webhook_events_unindexed;
    ALTER TABLE webhook_attempts
      DROP CONSTRAINT webhook_attempts_response_check, DROP CONSTRAINT webhook_attempts_response_key_check,
      DROP COLUMN response_body_sealed, DROP COLUMN response_body_key_id;
    DELETE FROM webhook_events WHERE body IS NULL;
    ALTER TABLE webhook_events
      DROP CONSTRAINT webhook_events_removed_check, DROP CONSTRAINT webhook_events_body_check,
        DROP CONSTRAINT webhook_events_body_key_check,
      DROP COLUMN subject_keys, DROP COLUMN status_reason, DROP COLUMN payload_removed_reason,
        DROP COLUMN payload_removed_at,
      DROP COLUMN body_key_id, DROP COLUMN body_sealed,
      ALTER COLUMN body SET NOT NULL;
  `);
}
