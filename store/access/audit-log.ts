import type { Knex } from 'knex';
import { joinSql, raw, runSql, sql, type SqlFragment } from '../../db/sql';
import type { AuditAction, AuditOutcome, AuditPhase } from '../../lib/vocabulary';
import { keysetPage, microsecondsOf, olderThan, type PageRequest } from '../../db/keyset';

// Reading the audit trail (audit_events, written only by store/access/audit.ts): filtered and paged newest first, on
// the indexes audit_events_at (at, id) and, with an actor, audit_events_actor (actor, at, id).

export interface AuditFilter {
  /** At or after. */
  readonly since?: Date;
  /** Exactly this actor: a token's name, INTERNAL_API_TOKEN or `cli:<user>@<host>`. */
  readonly actor?: string;
  readonly action?: AuditAction;
  /** Only intents whose outcome was never recorded (a crash, or a call still running). */
  readonly unsettled?: boolean;
}

/** Where a page ends: its last row's time in microseconds and its id. */
export interface AuditPosition {
  readonly atUs: string;
  readonly id: string;
}

/** One row of the audit trail, as the API and the CLI show it. */
export interface AuditEvent {
  readonly id: number;
  /** Its place in the hash chain (`audit verify`). */
  readonly seq: number;
  readonly at: Date;
  readonly actor: string;
  readonly action: AuditAction;
  readonly target: string | null;
  readonly parameters: Record<string, unknown>;
  readonly phase: AuditPhase;
  readonly operation_id: string;
  /** Null on an intent row: its outcome, when known, is a row of its own with the same operation id. */
  readonly outcome: AuditOutcome | null;
  /** Whether the operation's outcome row exists: false only for an intent that never got one. */
  readonly outcome_recorded: boolean;
  readonly error: string | null;
  readonly request_id: string | null;
  /** SHA-256 (hex) over the row before it and this row's content. */
  readonly hash: string;
}

const HAS_OUTCOME = raw(
  `(e.phase = 'outcome' OR EXISTS (SELECT 1 FROM audit_events o WHERE o.operation_id = e.operation_id AND ` +
    `o.phase = 'outcome'))`,
);

/** An AuditEvent's columns (row alias `e`) and its position, as every reading of the trail selects them. */
export const AUDIT_EVENT_COLUMNS = sql`id, seq, at, actor, action, target, parameters, phase, operation_id, outcome,
  ${HAS_OUTCOME} AS outcome_recorded, error, request_id, encode(hash, 'hex') AS hash,
  ${microsecondsOf('at')} AS position_us`;

function filterConditions({ since, actor, action, unsettled }: AuditFilter, after?: AuditPosition): SqlFragment {
  const conditions: SqlFragment[] = [raw('true')];
  if (unsettled) conditions.push(sql`NOT ${HAS_OUTCOME}`);
  if (actor !== undefined) conditions.push(sql`actor = ${actor}`);
  if (action) conditions.push(sql`action = ${action}`);
  if (since) conditions.push(sql`at >= ${since.toISOString()}::timestamptz`);
  if (after) conditions.push(olderThan('at', 'id', 'bigint', { us: after.atUs, id: after.id }));
  return joinSql(conditions, ' AND ');
}

/** Up to `limit` rows after `after`, newest first, and where the next page starts when there is one. */
export async function listAuditEvents(
  knex: Knex,
  filter: AuditFilter,
  { limit, after }: PageRequest<AuditPosition>,
): Promise<{ events: AuditEvent[]; next?: AuditPosition }> {
  const rows = await runSql<AuditEvent & { position_us: string }>(
    knex,
    sql`SELECT ${AUDIT_EVENT_COLUMNS}
          FROM audit_events e WHERE ${filterConditions(filter, after)} ORDER BY at DESC, id DESC LIMIT ${limit + 1}`,
  );
  const page = keysetPage(rows, limit);
  return { events: page.rows, next: page.last && { atUs: page.last.position_us, id: String(page.last.id) } };
}
