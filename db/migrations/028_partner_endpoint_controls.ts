import type { Knex } from 'knex';

/**
 * The partner's own controls on its endpoint, beside the operator's on the same gate row (docs/partners.md, "The
 * partner API"): a partner's pause (who, when, why) and the partner's own rate, which can only lower the
 * deployment's cap. An operator's pause and a partner's are kept apart so that a partner's resume cannot end an
 * operator's pause. Nullable columns without defaults: PostgreSQL adds them without rewriting the table.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE partner_gate
      ADD COLUMN partner_paused_at timestamptz,
      ADD COLUMN partner_pause_reason text,
      ADD COLUMN partner_paused_by text,
      ADD COLUMN partner_max_per_second integer CHECK (partner_max_per_second BETWEEN 1 AND 100000),
      ADD CONSTRAINT partner_gate_partner_pause_check CHECK (
        (partner_paused_at IS NULL) = (partner_pause_reason IS NULL)
        AND (partner_paused_at IS NULL) = (partner_paused_by IS NULL)
      )
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE partner_gate DROP CONSTRAINT partner_gate_partner_pause_check,
      DROP COLUMN partner_paused_at, DROP COLUMN partner_pause_reason, DROP COLUMN partner_paused_by,
      DROP COLUMN partner_max_per_second
  `);
}
