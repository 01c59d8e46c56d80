import type { Knex } from 'knex';

const ZERO_HASH = '\\x' + '00'.repeat(32);

/**
 * Empties the audit trail and its chain between tests, as only a test may: the table's owner switches its
 * triggers off for the one transaction (the service's own statements cannot TRUNCATE it).
 */
export async function resetAuditTrail(knex: Knex): Promise<void> {
  await knex.transaction(async (trx) => {
    await trx.raw('ALTER TABLE audit_events DISABLE TRIGGER USER; ALTER TABLE audit_chain DISABLE TRIGGER USER');
    await trx.raw('TRUNCATE audit_events');
    await trx.raw('UPDATE audit_chain SET head_seq = 0, head_hash = ?::bytea, anchor_seq = 0, anchor_hash = ?::bytea', [
      ZERO_HASH,
      ZERO_HASH,
    ]);
    await trx.raw('ALTER TABLE audit_events ENABLE TRIGGER USER; ALTER TABLE audit_chain ENABLE TRIGGER USER');
  });
}
