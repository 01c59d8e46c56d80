import type { Knex } from 'knex';
import { joinSql, runSql, sql, type SqlFragment } from '../../db/sql';
import { keysetPage, olderThan, type PageRequest } from '../../db/keyset';
import type { AuditAction } from '../../lib/vocabulary';
import { AUDIT_EVENT_COLUMNS, type AuditEvent, type AuditPosition } from './audit-log';

// The audit trail's rows that touched one partner app's deliveries or the partner's endpoint (GET
// /partner/v1/audit), newest first on audit_events_at. Which rows: docs/partners.md, "The audit trail of your
// deliveries".

/** Rows on the one partner endpoint: every app of the partner with the scope sees them. */
export const ENDPOINT_ACTIONS: readonly AuditAction[] = [
  'partner.pause',
  'partner.resume',
  'partner.limit',
  'endpoint.pause',
  'endpoint.resume',
  'endpoint.limit',
  'signing_secret.create',
  'signing_secret.delete',
];
/** Rows on one webhook, whose target is its id: seen when the webhook is of one of the app's companies. */
export const WEBHOOK_ACTIONS: readonly AuditAction[] = ['webhook.cancel', 'webhook.retry_now', 'webhook.redeliver'];
/** Rows whose `company_id` parameter says which company they concern (none: a bulk redelivery of every company). */
export const COMPANY_ACTIONS: readonly AuditAction[] = ['webhooks.redeliver', 'erasure.request'];

const UUID_PATTERN = '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';

export interface PartnerAuditScope {
  /** The app's own actor, `app:<id>`: all its rows are its own. */
  readonly actor: string;
  readonly companyIds: readonly string[];
}

function partnerRows({ actor, companyIds }: PartnerAuditScope): SqlFragment {
  const companies = sql`${[...companyIds]}::text[]`;
  return sql`(e.actor = ${actor}
    OR e.action = ANY(${[...ENDPOINT_ACTIONS]}::text[])
    OR (e.action = ANY(${[...WEBHOOK_ACTIONS]}::text[]) AND EXISTS (SELECT 1 FROM webhook_events w
          WHERE w.id = CASE WHEN e.target ~ ${UUID_PATTERN} THEN e.target::uuid END
            AND w.company_id = ANY(${companies})))
    OR (e.action = 'erasure.request' AND e.parameters->>'company_id' = ANY(${companies}))
    OR (e.action = 'webhooks.redeliver'
        AND (e.parameters->>'company_id' IS NULL OR e.parameters->>'company_id' = ANY(${companies}))))`;
}

/** Up to `limit` of the scope's rows in [since, until), after `after`, newest first, and where the next page starts. */
export async function listPartnerAuditEvents(
  knex: Knex,
  scope: PartnerAuditScope,
  window: { readonly since?: Date; readonly until?: Date },
  { limit, after }: PageRequest<AuditPosition>,
): Promise<{ events: AuditEvent[]; next?: AuditPosition }> {
  const conditions = [partnerRows(scope)];
  if (after) conditions.push(olderThan('e.at', 'e.id', 'bigint', { us: after.atUs, id: after.id }));
  if (window.since) conditions.push(sql`e.at >= ${window.since.toISOString()}::timestamptz`);
  if (window.until) conditions.push(sql`e.at < ${window.until.toISOString()}::timestamptz`);
  const rows = await runSql<AuditEvent & { position_us: string }>(
    knex,
    sql`SELECT ${AUDIT_EVENT_COLUMNS} FROM audit_events e WHERE ${joinSql(conditions, ' AND ')}
         ORDER BY e.at DESC, e.id DESC LIMIT ${limit + 1}`,
  );
  const page = keysetPage(rows, limit);
  return { events: page.rows, next: page.last && { atUs: page.last.position_us, id: String(page.last.id) } };
}
