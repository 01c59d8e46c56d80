import type { Knex } from 'knex';
import { z } from 'zod';
import { envelopeBody } from '../../events/envelope';
import type { DataAtRest } from '../../lib/at-rest';
import { FILTER_DETAIL, InternalApiError, InvalidRequestError } from '../../lib/errors';
import { decodeKeysetCursor, encodeKeysetCursor, NOT_A_CURSOR, wholeCount } from '../../lib/keyset-paging';
import { isCanonicalUuid, zodPathErrors } from '../../lib/validation';
import { EVENT_TYPES } from '../../lib/vocabulary';
import {
  feedHeldBack,
  findConsumer,
  firstFeedRow,
  readFeed,
  saveConsumer,
  type FeedRow,
} from '../../store/webhooks/partner-feed';
import { parseFilterFields } from './webhook-filter';

// The partner's pull feed (GET /partner/v1/events, docs/partners.md "The feed"): every webhook of the app's
// companies once, in the order their transactions were numbered, none skipped (docs/decisions.md says why it can
// promise that); a long poll; and consumers' stored positions.

export const DEFAULT_FEED_PAGE = 50;
export const MAX_FEED_PAGE = 500;
export const MAX_FEED_WAIT_SECONDS = 30;

/** The feed's query; the OpenAPI document's parameters are generated from it. */
export const feedQuery = z.strictObject({
  after: z.string().optional().meta({
    description: "A cursor from a page's `next_cursor` or an item's `cursor`; absent: the oldest event kept.",
  }),
  limit: wholeCount(MAX_FEED_PAGE).default(DEFAULT_FEED_PAGE),
  wait: z.coerce
    .number({ message: 'must be a whole number of seconds' })
    .int({ message: 'must be a whole number of seconds' })
    .min(0, { message: 'must be at least 0' })
    .max(MAX_FEED_WAIT_SECONDS, { message: `must be at most ${MAX_FEED_WAIT_SECONDS}` })
    .default(0)
    .meta({ description: `Seconds to hold an empty page until an event arrives (0 to ${MAX_FEED_WAIT_SECONDS}).` }),
  event_type: z.enum(EVENT_TYPES, { message: `must be one of ${EVENT_TYPES.join(', ')}` }).optional(),
  delivery_success: z
    .enum(['true', 'false'], { message: 'must be true or false' })
    .optional()
    .meta({ description: '`false`: only webhooks not delivered (yet, or ever); `true`: only delivered ones.' }),
});

/** A cursor's content: the feed position and when its row was written (for the retention check). */
const cursorShape = z.tuple([
  z.string().regex(/^\d{1,20}$/),
  z.string().refine(isCanonicalUuid),
  z.number().int().nonnegative(),
]);

const encodeCursor = (row: FeedRow) =>
  encodeKeysetCursor([row.position.xid, row.position.id, row.created_at.getTime()] as unknown as string[]);

function decodeCursor(cursor: string) {
  const decoded = decodeKeysetCursor(cursor, cursorShape);
  if (!decoded) throw new InvalidRequestError([{ ...NOT_A_CURSOR, path: 'after' }], FILTER_DETAIL);
  return { position: { xid: decoded[0], id: decoded[1] }, writtenAt: new Date(decoded[2]) };
}

/** Whether a cursor this API gave out (an item's or a page's), for a consumer's stored position. */
export function isFeedCursor(cursor: string): boolean {
  return decodeKeysetCursor(cursor, cursorShape) !== undefined;
}

/** Wakes a long poll when a webhook may have been added: api/partner/feed-notifier.ts. */
export interface FeedWakeups {
  /** Resolves at the next notification or at `deadline` (ms since the epoch), whichever is first. */
  next(deadline: number): Promise<void>;
  /** A notification came but its rows are not readable yet (an older transaction runs): wake again soon. */
  again(): void;
}

export interface FeedPage {
  readonly items: readonly FeedRow[];
  /** Where the next page starts: the last item's cursor, or the request's own when the page is empty. */
  readonly nextCursor: string | null;
  readonly cursorOf: (row: FeedRow) => string;
}

/**
 * One page of the feed for `companyIds`. A cursor older than the log's retention (`logRetentionDays`) is 410: rows
 * after it may have been purged, so reading on could skip some. With `wait`, an empty page is held until an event is
 * readable or the wait ends, woken by `wakeups` only (no query loop per reader).
 */
export async function readFeedPage(
  knex: Knex,
  atRest: DataAtRest,
  companyIds: readonly string[],
  query: Record<string, unknown>,
  { logRetentionDays, wakeups }: { logRetentionDays: number; wakeups: FeedWakeups },
): Promise<FeedPage> {
  const fields = parseFilterFields(feedQuery, query);
  const start = fields.after ? decodeCursor(fields.after) : undefined;
  if (start && start.writtenAt.getTime() < Date.now() - logRetentionDays * 86_400_000) {
    const first = await firstFeedRow(knex, companyIds);
    throw new InternalApiError(410, {
      detail:
        `This cursor is older than the log's retention (${logRetentionDays} days): events after it may have been ` +
        'removed. Read again from the start (without `after`).',
      reason: 'cursor_expired',
      oldest_available_at: first?.accepted_at.toISOString() ?? null,
    });
  }
  const filter = {
    eventType: fields.event_type,
    delivered: fields.delivery_success === undefined ? undefined : fields.delivery_success === 'true',
  };
  const read = () => readFeed(knex, atRest, companyIds, filter, { after: start?.position, limit: fields.limit });
  const deadline = Date.now() + fields.wait * 1000;
  let items = await read();
  while (items.length === 0 && Date.now() < deadline) {
    await wakeups.next(deadline);
    items = await read();
    if (items.length === 0 && (await feedHeldBack(knex, companyIds, filter, start?.position))) wakeups.again();
  }
  const last = items.at(-1);
  return { items, nextCursor: last ? encodeCursor(last) : (fields.after ?? null), cursorOf: encodeCursor };
}

/** An item as the feed answers it, with the exact JSON every attempt sends, or the tombstone that replaced it. */
export function feedItemJson(row: FeedRow, cursor: string): string {
  const head = JSON.stringify({
    id: row.id,
    cursor,
    event_type: row.event_type,
    action: row.action,
    company_id: row.company_id,
    ordering_key: row.ordering_key,
    sequence: row.sequence,
    accepted_at: row.accepted_at.toISOString(),
    status: row.status,
    ...(row.event === null && { removed: row.removed }),
  });
  // The body is spliced in as sent, byte for byte (JSON.stringify of a parsed copy could change a number's text).
  return row.event === null ? head : `${head.slice(0, -1)},"body":${envelopeBody(row.event)}}`;
}

const consumerName = z
  .string()
  .regex(/^[A-Za-z0-9._-]{1,64}$/, { message: 'must be 1 to 64 letters, digits, dots, underscores or hyphens' });

export const consumerRequest = z.strictObject({
  cursor: z
    .string({ message: 'must be a string' })
    .refine(isFeedCursor, { message: 'is not a cursor this API gave out' })
    .meta({ description: "An item's `cursor` or a page's `next_cursor`: where this consumer goes on from." }),
});

/** The name in a consumer's path, or 400. */
function nameOf(name: string | undefined): string {
  const parsed = consumerName.safeParse(name);
  if (!parsed.success) throw new InvalidRequestError([{ path: 'name', message: parsed.error.issues[0].message }]);
  return parsed.data;
}

/** PUT /partner/v1/consumers/{name}: stores the position (a reader's bookmark, not audited: see decisions.md). */
export async function putConsumer(knex: Knex, appId: string, name: string | undefined, body: unknown) {
  const consumer = nameOf(name);
  const parsed = consumerRequest.safeParse(body);
  if (!parsed.success) throw new InvalidRequestError(zodPathErrors(parsed.error));
  const updatedAt = await saveConsumer(knex, appId, consumer, parsed.data.cursor);
  return { name: consumer, cursor: parsed.data.cursor, updated_at: updatedAt.toISOString() };
}

/** GET /partner/v1/consumers/{name}; undefined when none was stored. */
export async function getConsumer(knex: Knex, appId: string, name: string | undefined) {
  const consumer = nameOf(name);
  const row = await findConsumer(knex, appId, consumer);
  return row && { name: consumer, cursor: row.position, updated_at: row.updated_at.toISOString() };
}
