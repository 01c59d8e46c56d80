import { z } from 'zod';
import { EVENT_ACTIONS, EVENT_TYPES, FINISHED_STATUSES, LOG_STATUSES } from '../../lib/vocabulary';
import { isCanonicalUuid, zodPathErrors } from '../../lib/validation';
import type { LogPosition, WebhookFilter } from '../../store/webhooks/delivery-log';
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

// The delivery log's filters and paging, as the API's query string, the bulk redeliver body and the CLI's
// flags give them: strings in, one validated WebhookFilter out.

export const DEFAULT_LOG_PAGE = 50;
export const MAX_LOG_PAGE = 500;
export const MAX_BULK_REDELIVERIES = 10_000;

/** The log's filters, shared by every list and body that selects webhooks (the partner's list too). */
export const filterFields = {
  event_type: z.enum(EVENT_TYPES).optional(),
  action: z.enum(EVENT_ACTIONS).optional(),
  company_id: exactText
    .optional()
    .meta({ description: 'Not empty, and no NUL character (PostgreSQL text cannot hold one).' }),
  since: isoDateTime.optional().meta({ description: 'Created at or after (ISO 8601 with a time zone).' }),
  // JSON Schema cannot compare two fields: the OpenAPI document states untilAfterSince in words.
  until: isoDateTime.optional().meta({
    description: 'Created before. Must be later than `since`, else 400 (an empty window is a mistake, not a filter).',
  }),
};

/** The log's `status` filter: a row's status, with `held` and `waiting` split from `pending`. */
export const logStatusField = z
  .enum(LOG_STATUSES)
  .optional()
  .meta({
    description:
      '`held`: the next attempt waits for the partner gate to open; `waiting`: an attempt failed and the next ' +
      'one is due; `pending`: not started, queued behind its ordering key, or sending.',
  });

export const untilAfterSince = (value: { since?: Date; until?: Date }) =>
  !value.since || !value.until || value.since < value.until;
export const untilAfterSinceIssue = { message: 'must be later than since', path: ['until'] };

/**
 * The delivery log's query string (GET /internal/v1/webhooks); the OpenAPI document's parameters are generated from it.
 */
export const listQuery = z
  .strictObject({
    ...filterFields,
    status: logStatusField,
    limit: wholeCount(MAX_LOG_PAGE).default(DEFAULT_LOG_PAGE),
    cursor: z.string().optional().meta({ description: 'From a `next` link; opaque. Empty or absent: the first page.' }),
  })
  .refine(untilAfterSince, untilAfterSinceIssue);

/** What `allow_expired_links` means, in the bulk body and the single redelivery's query alike. */
const ALLOW_EXPIRED_LINKS =
  "Redeliver even when the event's signed links are past their deadline (candidate files 24 h, file answers 2 " +
  'h after the event was accepted). ' +
  'Without it such an event is refused with 409 (bulk: skipped and counted).';

/**
 * The bulk redelivery's body (POST /internal/v1/webhooks/redeliver); the OpenAPI document's schema is generated from
 * it.
 */
export const bulkRedeliveryBody = z
  .strictObject({
    ...filterFields,
    status: z
      .enum(FINISHED_STATUSES, {
        message: `must be one of ${FINISHED_STATUSES.join(', ')}: only finished deliveries are redelivered`,
      })
      .optional(),
    limit: wholeCount(MAX_BULK_REDELIVERIES)
      .default(MAX_BULK_REDELIVERIES)
      .meta({ description: 'Start at most this many; call again to go on.' }),
    allow_expired_links: z
      .boolean({ message: 'must be true or false' })
      .default(false)
      .meta({ description: ALLOW_EXPIRED_LINKS }),
    dry_run: z
      .boolean({ message: 'must be true or false' })
      .default(false)
      .meta({
        description:
          'Start nothing: answer how many this request would start and skip now (`would_start` for `started`), ' +
          'counted in one query.',
      }),
  })
  .refine(untilAfterSince, untilAfterSinceIssue);

/** The query of a single redelivery; the OpenAPI document's parameter is generated from it. */
export const redeliveryQuery = z.object({
  allow_expired_links: queryFlag.meta({ description: ALLOW_EXPIRED_LINKS }),
});

/** `input` checked by `schema`; InvalidRequestError (400, the filter's detail) naming each field that is wrong. */
export function parseFilterFields<T extends z.ZodType>(schema: T, input: unknown): z.output<T> {
  const parsed = schema.safeParse(input);
  if (!parsed.success) throw new InvalidRequestError(zodPathErrors(parsed.error), FILTER_DETAIL);
  return parsed.data;
}

/** The filter a validated query or body gives. */
export const toFilter = (
  fields: Pick<z.output<typeof listQuery>, 'status' | 'event_type' | 'action' | 'company_id' | 'since' | 'until'>,
): WebhookFilter => ({
  status: fields.status,
  eventType: fields.event_type,
  action: fields.action,
  companyId: fields.company_id,
  since: fields.since,
  until: fields.until,
});

/** A page request of the delivery log: its filter, size and (from a `next` link) where it starts. */
export function parseLogQuery(query: Record<string, unknown>): {
  filter: WebhookFilter;
  limit: number;
  after?: LogPosition;
} {
  const fields = parseFilterFields(listQuery, query);
  // An empty cursor is the first page: `?cursor=` is what a client sends when it has no `next` link yet.
  return {
    filter: toFilter(fields),
    limit: fields.limit,
    after: fields.cursor ? decodeLogCursor(fields.cursor) : undefined,
  };
}

/**
 * A bulk redelivery: which finished webhooks, at most how many to start in this call, whether dead links may go, and
 * whether only to count.
 */
export function parseBulkRedelivery(body: unknown): {
  filter: WebhookFilter;
  limit: number;
  allowExpiredLinks: boolean;
  dryRun: boolean;
} {
  const fields = parseFilterFields(bulkRedeliveryBody, body ?? {});
  return {
    filter: toFilter(fields),
    limit: fields.limit,
    allowExpiredLinks: fields.allow_expired_links,
    dryRun: fields.dry_run,
  };
}

/** A single redelivery's query: whether the operator allows signed links past their deadline. */
export function parseRedeliveryQuery(query: Record<string, unknown>): { allowExpiredLinks: boolean } {
  return { allowExpiredLinks: parseFilterFields(redeliveryQuery, query).allow_expired_links };
}

/** Opaque to callers; it only carries a row's position. */
export const encodeLogCursor = (position: LogPosition): string =>
  encodeKeysetCursor([position.createdAtUs, position.id]);

const cursorShape = z.tuple([z.string().regex(/^\d{1,20}$/), z.string().refine(isCanonicalUuid)]);

function decodeLogCursor(cursor: string): LogPosition {
  const position = decodeKeysetCursor(cursor, cursorShape);
  if (!position) throw new InvalidRequestError([NOT_A_CURSOR], FILTER_DETAIL);
  return { createdAtUs: position[0], id: position[1] };
}
