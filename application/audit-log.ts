import type { Knex } from 'knex';
import { z } from 'zod';
import { AUDIT_ACTIONS } from '../lib/vocabulary';
import { formatPathError, zodPathErrors, type PathError } from '../lib/validation';
import { listAuditEvents, type AuditEvent, type AuditPosition } from '../store/audit-log';
import { decodeKeysetCursor, encodeKeysetCursor, exactText, isoDateTime, NOT_A_CURSOR, queryFlag, wholeCount } from './keyset-paging';

// Reading the audit trail, for GET /internal/v1/audit and `partner-service audit list`: the query as strings
// in, one page newest first out.

/** A filter or paging value an operator got wrong; the API answers 400 with one error per field, the CLI exits 2. */
export class AuditQueryError extends Error {
  constructor(readonly errors: readonly PathError[]) {
    super(errors.map(formatPathError).join('; '));
    this.name = 'AuditQueryError';
  }
}

export const DEFAULT_AUDIT_PAGE = 50;
export const MAX_AUDIT_PAGE = 500;

/** The audit trail's query string; the OpenAPI document's parameters are generated from it. */
export const auditQuery = z.strictObject({
  since: isoDateTime.optional().meta({ description: 'At or after (ISO 8601 with a time zone).' }),
  actor: exactText
    .optional()
    .meta({ description: 'Exactly this actor: a token\'s name, `INTERNAL_API_TOKEN` (the shared token) or `cli:<user>@<host>`.' }),
  action: z.enum(AUDIT_ACTIONS, { message: `must be one of ${AUDIT_ACTIONS.join(', ')}` }).optional(),
  unsettled: queryFlag.meta({ description: '`true`: only intents whose outcome was never recorded (a crash between the two, or a call still running).' }),
  limit: wholeCount(MAX_AUDIT_PAGE).default(DEFAULT_AUDIT_PAGE),
  cursor: z.string().optional().meta({ description: 'From a `next` link; opaque. Empty or absent: the first page.' }),
});

const cursorShape = z.tuple([z.string().regex(/^\d{1,20}$/), z.string().regex(/^\d{1,19}$/)]);

function decodeAuditCursor(cursor: string): AuditPosition {
  const position = decodeKeysetCursor(cursor, cursorShape);
  if (!position) throw new AuditQueryError([NOT_A_CURSOR]);
  return { atUs: position[0], id: position[1] };
}

/** One page of the audit trail, newest first, and the cursor of the next. */
export interface AuditPage {
  readonly events: AuditEvent[];
  readonly nextCursor: string | null;
}

/** Reads the page a query asks for (filters, limit, cursor as strings); throws AuditQueryError for bad ones. */
export async function readAuditTrail(knex: Knex, query: Record<string, unknown>): Promise<AuditPage> {
  const parsed = auditQuery.safeParse(query);
  if (!parsed.success) throw new AuditQueryError(zodPathErrors(parsed.error));
  const { since, actor, action, unsettled, limit, cursor } = parsed.data;
  // An empty cursor is the first page, as in the delivery log.
  const page = await listAuditEvents(knex, { since, actor, action, unsettled }, { limit, after: cursor ? decodeAuditCursor(cursor) : undefined });
  return { events: page.events, nextCursor: page.next ? encodeKeysetCursor([page.next.atUs, page.next.id]) : null };
}
