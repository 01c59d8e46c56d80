import type { Knex } from 'knex';
import { prepared, runSql, sql } from '../../db/sql';
import type { AuditAction, AuditOutcome, AuditPhase } from '../../lib/vocabulary';

// Every write to audit_events (db/migrations/016_tokens_and_audit.ts, 020_verifiable_audit.ts): rows are
// appended, never changed; the table's trigger chains each one (seq, prev_hash, hash).

/**
 * One audit row: who did what to which target, with which parameters (no secret, no personal data), and how it
 * ended. An `intent` row (outcome null) is written before a call to Temporal; its `outcome` row shares its
 * operation id.
 */
export interface AuditEntry {
  readonly operationId: string;
  readonly phase: AuditPhase;
  readonly actor: string;
  readonly action: AuditAction;
  readonly target: string | null;
  readonly parameters: Readonly<Record<string, unknown>>;
  readonly outcome: AuditOutcome | null;
  /** Why a failed change failed, in words that carry no secret or personal data; null when it succeeded. */
  readonly error: string | null;
  readonly requestId: string | null;
}

/** Appends one audit row; inside the change's own transaction when `knex` is one. */
export async function insertAuditEvent(knex: Knex, entry: AuditEntry): Promise<void> {
  await runSql(
    knex,
    prepared(
      'insert-audit-event',
      sql`INSERT INTO audit_events (operation_id, phase, actor, action, target, parameters, outcome, error, request_id)
          VALUES (${entry.operationId}::uuid, ${entry.phase}, ${entry.actor}, ${entry.action}, ${entry.target},
            ${JSON.stringify(entry.parameters)}::jsonb, ${entry.outcome}, ${entry.error}, ${entry.requestId})`,
    ),
  );
}
