import type { Knex } from 'knex';

/**
 * The partner's signing secrets made through the partner API (docs/partners.md, "Signing secrets"). A secret rests
 * as bodies do: sealed under PAYLOAD_ENCRYPTION_KEYS (`secret_sealed` and its `secret_key_id`, bound to its row), or in
 * clear in a deployment without keys. A row stays after its secret ends (expired or deleted) so the list of what
 * signed is kept and the configuration's secrets know when the first API secret came; the secret itself is wiped
 * then. The table holds a handful of rows: no index beyond the key.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE partner_signing_secrets (
      id            uuid PRIMARY KEY,
      secret_text   text,
      secret_sealed bytea,
      secret_key_id text,
      created_at    timestamptz NOT NULL DEFAULT now(),
      created_by    text NOT NULL,
      expires_at    timestamptz,
      deleted_at    timestamptz,
      last_used_at  timestamptz,
      CONSTRAINT partner_signing_secrets_one_form CHECK (secret_text IS NULL OR secret_sealed IS NULL),
      CONSTRAINT partner_signing_secrets_sealed_key CHECK ((secret_sealed IS NULL) = (secret_key_id IS NULL)),
      CONSTRAINT partner_signing_secrets_live_has_secret CHECK (
        secret_text IS NOT NULL OR secret_sealed IS NOT NULL OR deleted_at IS NOT NULL OR expires_at IS NOT NULL
      )
    )
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE partner_signing_secrets');
}
