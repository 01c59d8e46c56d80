import type { Knex } from 'knex';
import { z } from 'zod';
import { AUDIT_ACTIONS } from '../../lib/vocabulary';
import { zodPathErrors } from '../../lib/validation';
import { listAuditEvents, type AuditEvent, type AuditPosition } from '../../store/access/audit-log';
import {
  decodeKeysetCursor,
  encodeKeysetCursor,
  exactText,
  isoDateTime,
  NOT_A_CURSOR,
  queryFlag,
  wholeCount,
} from '../../lib/keyset-paging';
import { FILTER_DETAIL, InvalidRequestError } from '../../lib/errors';

// Reading the audit trail, for GET /internal/v1/audit and `partner-service audit list`: the query as strings
// in, one page newest first out.

export const DEFAULT_AUDIT_PAGE = 50;
export const MAX_AUDIT_PAGE = 500;

/** The audit trail's query string; the OpenAPI document's parameters are generated from it. */
export const auditQuery = z.strictObject({
  since: isoDateTime.optional().meta({ description: 'At or after (ISO 8601 with a time zone).' }),
  actor: exactText.optional().meta({
    description: "Exactly this actor: a token's name, `INTERNAL_API_TOKEN` (the shared token) or `cli:<user>@<host>`.",
  }),
  action: z.enum(AUDIT_ACTIONS, { message: `must be one of ${AUDIT_ACTIONS.join(', ')}` }).optional(),
  unsettled: queryFlag.meta({
    description:
      '`true`: only intents whose outcome was never recorded (a crash between the two, or a call still running).',
  }),
  limit: wholeCount(MAX_AUDIT_PAGE).default(DEFAULT_AUDIT_PAGE),
  cursor: z.string().optional().meta({ description: 'From a `next` link; opaque. Empty or absent: the first page.' }),
});

const cursorShape = z.tuple([z.string().regex(/^\d{1,20}$/), z.string().regex(/^\d{1,19}$/)]);

/** The position a `next` link's cursor carries; InvalidRequestError for any other text. */
export function decodeAuditCursor(cursor: string): AuditPosition {
  const position = decodeKeysetCursor(cursor, cursorShape);
  if (!position) throw new InvalidRequestError([NOT_A_CURSOR], FILTER_DETAIL);
  return { atUs: position[0], id: position[1] };
}

/** The cursor of a page's `next` link; null on the last page. */
export const encodeAuditCursor = (next: AuditPosition | undefined): string | null =>
  next ? encodeKeysetCursor([next.atUs, next.id]) : null;

/** One page of the audit trail, newest first, and the cursor of the next. */
export interface AuditPage {
  readonly events: AuditEvent[];
  readonly nextCursor: string | null;
}

/** Reads the page a query asks for (filters, limit, cursor as strings); throws InvalidRequestError for bad ones. */
export async function readAuditTrail(knex: Knex, query: Record<string, unknown>): Promise<AuditPage> {
  const parsed = auditQuery.safeParse(query);
  if (!parsed.success) throw new InvalidRequestError(zodPathErrors(parsed.error), FILTER_DETAIL);
  const { since, actor, action, unsettled, limit, cursor } = parsed.data;
  // An empty cursor is the first page, as in the delivery log.
  const page = await listAuditEvents(
    knex,
    { since, actor, action, unsettled },
    { limit, after: cursor ? decodeAuditCursor(cursor) : undefined },
  );
  return { events: page.events, nextCursor: encodeAuditCursor(page.next) };
}
