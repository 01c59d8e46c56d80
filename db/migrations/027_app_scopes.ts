import type { Knex } from 'knex';

/**
 * What each partner app may do (docs/partners.md, "The partner API"): `listings` is what every app did before,
 * so existing apps keep it. The literals are frozen here; lib/vocabulary.ts `APP_SCOPES` names the same four.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE partner_apps ADD COLUMN scopes text[] NOT NULL DEFAULT '{listings}'
      CONSTRAINT partner_apps_scopes_check CHECK (
        cardinality(scopes) >= 1
        AND scopes <@ ARRAY['listings', 'deliveries:read', 'deliveries:write', 'endpoint:manage']::text[]
      )
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE partner_apps DROP COLUMN scopes');
}
