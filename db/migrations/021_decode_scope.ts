import type { Knex } from 'knex';

/**
 * The scope `decode`: a named token that may use the codec server (/codec), so that CODEC_AUTH_TOKEN, a shared
 * token, can be retired (docs/access.md, "Tokens and scopes"). Only the CHECK widens; no row changes.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_scopes_check,
      ADD CONSTRAINT api_tokens_scopes_check CHECK (cardinality(scopes) > 0
        AND scopes <@ ARRAY['ingest', 'read', 'operate', 'erase', 'decode']);
  `);
}

/** Refused while a token holds `decode`: revoke and delete those first, as no other scope stands in for it. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_scopes_check,
      ADD CONSTRAINT api_tokens_scopes_check CHECK (cardinality(scopes) > 0
        AND scopes <@ ARRAY['ingest', 'read', 'operate', 'erase']);
  `);
}
