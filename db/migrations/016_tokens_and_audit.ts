import type { Knex } from 'knex';

/**
 * Least privilege for the internal API:
 * - `api_tokens`: named tokens, each with its scopes, kept only as a salted SHA-256 of the secret. A revoked
 *   token keeps its row (and so its name), so that the audit trail's actor names one token for ever;
 * - `audit_events`: one row per change an operator made, through the API or the CLI, failed ones included.
 *   Rows are appended, never changed: a trigger refuses every UPDATE; only the retention purge deletes.
 * Literals are frozen here, as in every migration.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE api_tokens (
      id           uuid PRIMARY KEY,
      name         text NOT NULL UNIQUE CHECK (name ~ '^[a-z0-9][a-z0-9._-]{0,62}$'),
      scopes       text[] NOT NULL CHECK (cardinality(scopes) > 0
        AND scopes <@ ARRAY['ingest', 'read', 'operate', 'erase']),
      salt         bytea NOT NULL,
      hash         bytea NOT NULL,
      created_at   timestamptz NOT NULL DEFAULT now(),
      created_by   text NOT NULL,
      expires_at   timestamptz,
      revoked_at   timestamptz,
      revoked_by   text,
      last_used_at timestamptz,
      CHECK ((revoked_at IS NULL) = (revoked_by IS NULL)),
      CHECK (expires_at IS NULL OR expires_at > created_at)
    );

    CREATE TABLE audit_events (
      id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      at         timestamptz NOT NULL DEFAULT clock_timestamp(),
      actor      text NOT NULL,
      action     text NOT NULL,
      target     text,
      parameters jsonb NOT NULL DEFAULT '{}',
      outcome    text NOT NULL CHECK (outcome IN ('succeeded', 'failed')),
      error      text,
      request_id text,
      CHECK ((outcome = 'failed') = (error IS NOT NULL))
    );
    CREATE INDEX audit_events_at ON audit_events (at, id);
    CREATE INDEX audit_events_actor ON audit_events (actor, at, id);

    CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'audit_events rows are never changed' USING ERRCODE = 'insufficient_privilege';
    END $$;
    CREATE TRIGGER audit_events_append_only BEFORE UPDATE ON audit_events FOR EACH ROW
      EXECUTE FUNCTION audit_events_append_only();
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TABLE audit_events, api_tokens;
    DROP FUNCTION audit_events_append_only();
  `);
}
