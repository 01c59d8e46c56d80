import type { Knex } from 'knex';
import { z } from 'zod';
import { isoDateTime, wholeCount } from '../../lib/keyset-paging';
import { FILTER_DETAIL, InvalidRequestError } from '../../lib/errors';
import { zodPathErrors } from '../../lib/validation';
import type { AuditEvent } from '../../store/access/audit-log';
import { listPartnerAuditEvents } from '../../store/access/partner-audit';
import { appActor } from './partner-apps';
import { decodeAuditCursor, encodeAuditCursor } from './audit-log';

// The audit trail as a partner app reads it (GET /partner/v1/audit): the rows that touched its deliveries or the
// endpoint, with every operator shown as `operator` (never a token's name, a person or a host) and an erasure as
// the fact and its company only.

export const DEFAULT_PARTNER_AUDIT_PAGE = 50;
export const MAX_PARTNER_AUDIT_PAGE = 100;

/** The query string; the OpenAPI document's parameters are generated from it. */
export const partnerAuditQuery = z
  .strictObject({
    since: isoDateTime.optional().meta({ description: 'At or after (ISO 8601 with a time zone).' }),
    until: isoDateTime
      .optional()
      .meta({ description: 'Before. Must be later than `since`, else 400 (an empty window is a mistake).' }),
    limit: wholeCount(MAX_PARTNER_AUDIT_PAGE).default(DEFAULT_PARTNER_AUDIT_PAGE),
    cursor: z.string().optional().meta({ description: 'From a `next` link; opaque. Empty or absent: the newest.' }),
  })
  .refine((value) => !value.since || !value.until || value.since < value.until, {
    message: 'must be later than since',
    path: ['until'],
  });

/** A trail row as a partner sees it. */
export type PartnerAuditEvent = Omit<AuditEvent, 'request_id'>;

/** `app:<id>` stays; any other actor (a token's name, INTERNAL_API_TOKEN, `cli:<user>@<host>`) is `operator`. */
export const partnerActor = (actor: string): string => (actor.startsWith('app:') ? actor : 'operator');

/** What a partner sees of a row: the operator unnamed, an erasure's parameters cut to its company. */
function asPartnerEvent({ request_id: _requestId, ...event }: AuditEvent): PartnerAuditEvent {
  const parameters =
    event.action === 'erasure.request' ? { company_id: event.parameters.company_id } : event.parameters;
  return { ...event, actor: partnerActor(event.actor), parameters };
}

export async function readPartnerAudit(
  knex: Knex,
  app: { readonly appId: string; readonly companyIds: readonly string[] },
  query: Record<string, unknown>,
): Promise<{ events: PartnerAuditEvent[]; nextCursor: string | null }> {
  const parsed = partnerAuditQuery.safeParse(query);
  if (!parsed.success) throw new InvalidRequestError(zodPathErrors(parsed.error), FILTER_DETAIL);
  const { since, until, limit, cursor } = parsed.data;
  const page = await listPartnerAuditEvents(
    knex,
    { actor: appActor(app.appId), companyIds: app.companyIds },
    { since, until },
    { limit, after: cursor ? decodeAuditCursor(cursor) : undefined },
  );
  return { events: page.events.map(asPartnerEvent), nextCursor: encodeAuditCursor(page.next) };
}
