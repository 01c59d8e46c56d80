import type { Knex } from 'knex';
import { joinSql, raw, runSql, sql, type SqlFragment } from '../db/sql';
import type { AuditAction, AuditOutcome } from '../lib/vocabulary';
import { keysetPage, microsecondsOf, olderThan, type PageRequest } from './keyset';

// Reading the audit trail (audit_events, written only by store/audit.ts): filtered and paged newest first, on
// the indexes audit_events_at (at, id) and, with an actor, audit_events_actor (actor, at, id).

export interface AuditFilter {
  /** At or after. */
  readonly since?: Date;
  /** Exactly this actor: a token's name, INTERNAL_API_TOKEN or `cli:<user>@<host>`. */
  readonly actor?: string;
  readonly action?: AuditAction;
}

/** Where a page ends: its last row's time in microseconds and its id. */
export interface AuditPosition {
  readonly atUs: string;
  readonly id: string;
}

/** One row of the audit trail, as the API and the CLI show it. */
export interface AuditEvent {
  readonly id: number;
  readonly at: Date;
  readonly actor: string;
  readonly action: AuditAction;
  readonly target: string | null;
  readonly parameters: Record<string, unknown>;
  readonly outcome: AuditOutcome;
  readonly error: string | null;
  readonly request_id: string | null;
}

function filterConditions({ since, actor, action }: AuditFilter, after?: AuditPosition): SqlFragment {
  const conditions: SqlFragment[] = [raw('true')];
  if (actor !== undefined) conditions.push(sql`actor = ${actor}`);
  if (action) conditions.push(sql`action = ${action}`);
  if (since) conditions.push(sql`at >= ${since.toISOString()}::timestamptz`);
  if (after) conditions.push(olderThan('at', 'id', 'bigint', { us: after.atUs, id: after.id }));
  return joinSql(conditions, ' AND ');
}

/** Up to `limit` rows after `after`, newest first, and where the next page starts when there is one. */
export async function listAuditEvents(knex: Knex, filter: AuditFilter, { limit, after }: PageRequest<AuditPosition>): Promise<{ events: AuditEvent[]; next?: AuditPosition }> {
  const rows = await runSql<AuditEvent & { position_us: string }>(
    knex,
    sql`SELECT id, at, actor, action, target, parameters, outcome, error, request_id, ${microsecondsOf('at')} AS position_us
          FROM audit_events WHERE ${filterConditions(filter, after)} ORDER BY at DESC, id DESC LIMIT ${limit + 1}`,
  );
  const page = keysetPage(rows, limit);
  return { events: page.rows, next: page.last && { atUs: page.last.position_us, id: String(page.last.id) } };
}
