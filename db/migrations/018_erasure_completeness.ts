import type { Knex } from 'knex';

/**
 * Erasures that find every subject and say why they wait (docs/personal-data.md):
 * - the subject index has key ids: `subject_index_keys` lists the keys the deployment has indexed under (a
 *   fingerprint, never the key), so a process with another key or none is refused rather than finding nobody;
 *   each row says which key hashed it (`subject_key_id`, NULL before key ids), and the reindex moves rows to the
 *   newest key through the partial index `webhook_events_subject_key`;
 * - an erasure may name a phone number, keeps its subject's HMAC under every key it searched (`subject_keys`,
 *   `subject_key_ids`), and says why it is still pending (`pending_reason`);
 * - `temporal_namespaces` keeps each namespace's retention as the workers read it, so the log purge keeps a row
 *   while Temporal may still hold its run (an erasure finds the run through the row).
 * Literals are frozen here, as in every migration.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE subject_index_keys (
      key_id        text PRIMARY KEY,
      fingerprint   text NOT NULL,
      registered_at timestamptz NOT NULL DEFAULT now(),
      retired_at    timestamptz
    );
    ALTER TABLE webhook_events ADD COLUMN subject_key_id text;
    CREATE INDEX webhook_events_subject_key ON webhook_events (subject_key_id, id) WHERE payload_removed_at IS NULL;

    ALTER TABLE erasures
      DROP CONSTRAINT erasures_subject_kind_check,
      ADD CONSTRAINT erasures_subject_kind_check CHECK (subject_kind IN ('candidate_id', 'email', 'phone')),
      ADD COLUMN subject_keys text[],
      ADD COLUMN subject_key_ids text[],
      ADD COLUMN pending_reason text;
    UPDATE erasures SET subject_keys = ARRAY[subject_key], subject_key_ids = '{}';
    ALTER TABLE erasures ALTER COLUMN subject_keys SET NOT NULL, ALTER COLUMN subject_key_ids SET NOT NULL;
    CREATE INDEX erasures_pending ON erasures (requested_at) WHERE status = 'pending';

    CREATE TABLE temporal_namespaces (
      namespace         text PRIMARY KEY,
      retention_seconds bigint NOT NULL CHECK (retention_seconds >= 0),
      read_at           timestamptz NOT NULL DEFAULT now()
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TABLE temporal_namespaces;
    DROP INDEX erasures_pending;
    DELETE FROM erasures WHERE subject_kind = 'phone';
    ALTER TABLE erasures
      DROP COLUMN pending_reason, DROP COLUMN subject_key_ids, DROP COLUMN subject_keys,
      DROP CONSTRAINT erasures_subject_kind_check,
      ADD CONSTRAINT erasures_subject_kind_check CHECK (subject_kind IN ('candidate_id', 'email'));
    DROP INDEX webhook_events_subject_key;
    ALTER TABLE webhook_events DROP COLUMN subject_key_id;
    DROP TABLE subject_index_keys;
  `);
}
