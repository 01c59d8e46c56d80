import type { Knex } from 'knex';
import { prepared, runSql, sql } from '../db/sql';
import type { AuditAction, AuditOutcome } from '../lib/vocabulary';

// Every write to audit_events (db/migrations/016_tokens_and_audit.ts): rows are appended, never changed.

/** One audit row: who did what to which target, with which parameters (no secret, no personal data), and how it ended. */
export interface AuditEntry {
  readonly actor: string;
  readonly action: AuditAction;
  readonly target: string | null;
  readonly parameters: Readonly<Record<string, unknown>>;
  readonly outcome: AuditOutcome;
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
      sql`INSERT INTO audit_events (actor, action, target, parameters, outcome, error, request_id)
          VALUES (${entry.actor}, ${entry.action}, ${entry.target}, ${JSON.stringify(entry.parameters)}::jsonb, ${entry.outcome}, ${entry.error}, ${entry.requestId})`,
    ),
  );
}
