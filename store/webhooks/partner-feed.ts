import type { Knex } from 'knex';
import { joinSql, prepared, raw, runSql, sql, type SqlFragment } from '../../db/sql';
import type { DataAtRest } from '../../lib/at-rest';
import type { EventAction, EventType, LogStatus } from '../../lib/vocabulary';
import { openLaneKey, type LaneKeyColumns } from '../ordering/lanes';
import { LOG_STATUS_SQL } from './delivery-log';
import { BODY_COLUMNS, openBody, type BodyColumns } from './webhook-rows';
import type { WebhookEnvelope } from '../../events/envelope';

// The partner's pull feed (GET /partner/v1/events, migration 033): the app's companies' webhooks in the order of
// the transactions that inserted them, read only below the oldest transaction still running, so a row that commits
// late can never fall behind a cursor already read. One index range per company (webhook_events_feed), merged.

/** A place in the feed: the inserting transaction's id (xid8, as text) and the webhook's id. */
export interface FeedPosition {
  readonly xid: string;
  readonly id: string;
}

/** What the feed's query may narrow. */
export interface FeedFilter {
  readonly eventType?: EventType;
  /** `delivery_success`: true, only delivered webhooks; false, only the others. */
  readonly delivered?: boolean;
}

export interface FeedRow {
  readonly id: string;
  readonly event_type: EventType;
  readonly action: EventAction;
  readonly company_id: string;
  readonly ordering_key: string | null;
  readonly sequence: number | null;
  readonly accepted_at: Date;
  /** When its row was written (a redelivery's own time): retention counts from here. */
  readonly created_at: Date;
  readonly status: LogStatus;
  /** The event as every attempt sends it; null once removed (`removed` says why). */
  readonly event: WebhookEnvelope | null;
  readonly removed: 'retention' | 'erasure' | null;
  readonly position: FeedPosition;
}

type Row = Omit<FeedRow, 'ordering_key' | 'sequence' | 'event' | 'removed' | 'position'> &
  BodyColumns &
  LaneKeyColumns & {
    seq: string | null;
    feed_xid: string;
    payload_removed_at: Date | null;
    payload_removed_reason: 'retention' | 'erasure' | null;
  };

/** What an item needs of its row (and LOG_STATUS_SQL of it), and nothing more: a page reads up to 500 of them. */
const FEED_COLUMNS = raw(
  'e.id, e.event_type, e.action, e.company_id, e.accepted_at, e.created_at, e.status, e.held_since, ' +
    'e.claimed_attempt, e.feed_xid, e.body, e.body_sealed, e.body_key_id, e.redelivery_of, e.payload_removed_at, ' +
    'e.payload_removed_reason',
);

/** Up to `limit` rows of `companyIds` after `after` (from the start without it), in the feed's order. */
export async function readFeed(
  knex: Knex,
  atRest: DataAtRest,
  companyIds: readonly string[],
  filter: FeedFilter,
  { after, limit }: { readonly after?: FeedPosition; readonly limit: number },
): Promise<FeedRow[]> {
  if (companyIds.length === 0) return [];
  // The horizon once per statement (an InitPlan): only transactions below the oldest one running.
  const conditions = [
    ...feedConditions(filter, after),
    raw('e.feed_xid < (SELECT pg_snapshot_xmin(pg_current_snapshot()))'),
  ];
  const where = joinSql(conditions, ' AND ');
  // One company reads its index range in order directly; several merge theirs, each limited first.
  const picked =
    companyIds.length === 1
      ? sql`SELECT ${FEED_COLUMNS} FROM webhook_events e WHERE e.company_id = ${companyIds[0]} AND ${where}
             ORDER BY e.feed_xid, e.id LIMIT ${limit}`
      : sql`SELECT picked.* FROM unnest(${[...companyIds]}::text[]) AS c(company_id)
             CROSS JOIN LATERAL (
               SELECT ${FEED_COLUMNS} FROM webhook_events e WHERE e.company_id = c.company_id AND ${where}
                ORDER BY e.feed_xid, e.id LIMIT ${limit}) picked
             ORDER BY picked.feed_xid, picked.id LIMIT ${limit}`;
  // Prepared per shape (a page is planned once per connection, not per request): the shape is the query's form.
  const shape = [
    companyIds.length === 1 ? 'one' : 'many',
    after ? 'after' : 'start',
    filter.eventType ? 'type' : '',
    filter.delivered === undefined ? '' : String(filter.delivered),
  ].join('-');
  const rows = await runSql<Row>(
    knex,
    prepared(
      `partner-feed-${shape}`,
      sql`SELECT e.id, e.event_type, e.action, e.company_id, e.accepted_at, e.created_at, ${LOG_STATUS_SQL} AS status,
                 e.feed_xid::text AS feed_xid, ${BODY_COLUMNS}, e.payload_removed_at, e.payload_removed_reason,
                 p.seq, l.key_digest, l.key_text, l.key_sealed, l.key_key_id
            FROM (${picked}) e
            LEFT JOIN ordering_places p ON p.webhook_id = e.id
            LEFT JOIN ordering_lanes l ON l.id = p.lane_id
           ORDER BY e.feed_xid, e.id`,
    ),
  );
  return rows.map((row) => ({
    id: row.id,
    event_type: row.event_type,
    action: row.action,
    company_id: row.company_id,
    ordering_key: row.seq === null ? null : openLaneKey(atRest, row).key,
    sequence: row.seq === null ? null : Number(row.seq),
    accepted_at: row.accepted_at,
    created_at: row.created_at,
    status: row.status,
    event: row.payload_removed_at ? null : openBody(atRest, row.id, row),
    removed: row.payload_removed_at ? (row.payload_removed_reason ?? 'retention') : null,
    position: { xid: row.feed_xid, id: row.id },
  }));
}

/** Rows after `after` matching `filter` (alias `e`), wherever the horizon is. */
function feedConditions(filter: FeedFilter, after?: FeedPosition): SqlFragment[] {
  const conditions = [after ? sql`(e.feed_xid, e.id) > (${after.xid}::xid8, ${after.id}::uuid)` : raw('true')];
  if (filter.eventType) conditions.push(sql`e.event_type = ${filter.eventType}`);
  if (filter.delivered !== undefined)
    conditions.push(raw(filter.delivered ? `e.status = 'delivered'` : `e.status <> 'delivered'`));
  return conditions;
}

/**
 * Whether rows after `after` exist that the feed holds back: committed, but not below the oldest running
 * transaction yet. A long poll that finds nothing reads again soon only then.
 */
export async function feedHeldBack(
  knex: Knex,
  companyIds: readonly string[],
  filter: FeedFilter,
  after?: FeedPosition,
): Promise<boolean> {
  const [row] = await runSql<{ held: boolean }>(
    knex,
    sql`SELECT EXISTS (
          SELECT 1 FROM webhook_events e
           WHERE e.company_id = ANY(${[...companyIds]}::text[]) AND ${joinSql(feedConditions(filter, after), ' AND ')}
             AND e.feed_xid >= pg_snapshot_xmin(pg_current_snapshot())) AS held`,
  );
  return row.held;
}

/** The app's first row in the feed, if any: where a reader whose cursor is past retention starts again. */
export async function firstFeedRow(
  knex: Knex,
  companyIds: readonly string[],
): Promise<{ accepted_at: Date } | undefined> {
  const [row] = await runSql<{ accepted_at: Date }>(
    knex,
    sql`SELECT first.accepted_at
          FROM unnest(${[...companyIds]}::text[]) AS c(company_id)
          CROSS JOIN LATERAL (SELECT e.feed_xid, e.id, e.accepted_at FROM webhook_events e
                               WHERE e.company_id = c.company_id ORDER BY e.feed_xid, e.id LIMIT 1) first
         ORDER BY first.feed_xid, first.id LIMIT 1`,
  );
  return row;
}

/** A consumer's stored position (PUT/GET /partner/v1/consumers/{name}). */
export async function saveConsumer(knex: Knex, appId: string, name: string, position: string): Promise<Date> {
  const [row] = await runSql<{ updated_at: Date }>(
    knex,
    sql`INSERT INTO partner_feed_consumers (app_id, name, position) VALUES (${appId}, ${name}, ${position})
        ON CONFLICT (app_id, name) DO UPDATE SET position = EXCLUDED.position, updated_at = now()
        RETURNING updated_at`,
  );
  return row.updated_at;
}

export async function findConsumer(
  knex: Knex,
  appId: string,
  name: string,
): Promise<{ position: string; updated_at: Date } | undefined> {
  const [row] = await runSql<{ position: string; updated_at: Date }>(
    knex,
    sql`SELECT position, updated_at FROM partner_feed_consumers WHERE app_id = ${appId} AND name = ${name}`,
  );
  return row;
}
