import type { Knex } from 'knex';

/**
 * The partner portal's access (docs/partners.md, "The portal"): one-time links and the sessions they open. Each
 * row is found by its id and holds only a salted hash of its secret, as app keys do; the token is `<id>.<secret>`.
 * A link is used once (`used_at`) and lives 10 minutes at most; a session lives an hour at most and is bound to its
 * app and the scopes it was opened with. `csrf_hash` is the session's double-submit token for writes. The tables
 * stay small (expired rows are deleted when new ones are written): no index beyond the keys and the app's.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE portal_links (
      id           uuid PRIMARY KEY,
      secret_salt  bytea NOT NULL,
      secret_hash  bytea NOT NULL,
      app_id       text NOT NULL REFERENCES partner_apps (app_id),
      scopes       text[] NOT NULL,
      created_by   text NOT NULL,
      created_at   timestamptz NOT NULL DEFAULT now(),
      expires_at   timestamptz NOT NULL,
      used_at      timestamptz,
      CHECK (expires_at > created_at)
    );
    CREATE TABLE portal_sessions (
      id           uuid PRIMARY KEY,
      secret_salt  bytea NOT NULL,
      secret_hash  bytea NOT NULL,
      csrf_salt    bytea NOT NULL,
      csrf_hash    bytea NOT NULL,
      link_id      uuid NOT NULL UNIQUE REFERENCES portal_links (id),
      app_id       text NOT NULL REFERENCES partner_apps (app_id),
      scopes       text[] NOT NULL,
      created_at   timestamptz NOT NULL DEFAULT now(),
      expires_at   timestamptz NOT NULL,
      ended_at     timestamptz,
      CHECK (expires_at > created_at)
    );
    CREATE INDEX portal_sessions_app ON portal_sessions (app_id) WHERE ended_at IS NULL;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE portal_sessions; DROP TABLE portal_links');
}
