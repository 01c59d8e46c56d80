import type { Knex } from 'knex';
import { joinSql, raw, runSql, sql, type SqlFragment } from '../../db/sql';
import { keysetPage, newerThan, olderThan } from '../../db/keyset';
import type { DataAtRest } from '../../lib/at-rest';
import type { EventAction, EventType, LogStatus } from '../../lib/vocabulary';
import { indexKeysOf } from '../personal-data/subject-index-keys';
import { laneDigests, openLaneKey, placedInLaneOf, type LaneKeyColumns } from '../ordering/lanes';
import { filterConditions, LOG_STATUS_SQL, POSITION, type LogPosition, type WebhookFilter } from './delivery-log';

// The partner's delivery list (GET /partner/v1/webhooks): the delivery log's filters over the app's granted
// companies only, paged both ways. One index range per company (webhook_events_company_keyset, migration 031),
// merged newest first, so a page costs the same at 3 M webhooks as at 30 k.

/** The delivery log's filter, with an ordering key. */
export interface PartnerDeliveryFilter extends WebhookFilter {
  readonly orderingKey?: string;
}

/** A page of the partner's list: after a position (older rows, `next`) or before one (newer rows, `previous`). */
export interface TwoWayPageRequest {
  readonly limit: number;
  readonly after?: LogPosition;
  readonly before?: LogPosition;
}

/** One webhook of the partner's list: never its body (GET …/{id}/body) nor its attempts (GET …/{id}). */
export interface PartnerDeliveryRow {
  readonly id: string;
  readonly event_id: string;
  readonly event_type: EventType;
  readonly action: EventAction;
  readonly company_id: string | null;
  readonly status: LogStatus;
  /** Null when unordered, or once an erasure cleared its lane's key. */
  readonly ordering_key: string | null;
  readonly sequence: number | null;
  readonly attempts: number;
  readonly accepted_at: Date;
  readonly finished_at: Date | null;
  readonly is_test: boolean;
  readonly redelivery_of: string | null;
}

/** A page in newest-first order, and whether more rows lie past each of its ends. */
export interface PartnerDeliveryPage {
  readonly webhooks: PartnerDeliveryRow[];
  /** Where the older rows start, when there are any. */
  readonly next?: LogPosition;
  /** Where the newer rows start, when there are any. */
  readonly previous?: LogPosition;
}

type Row = Omit<PartnerDeliveryRow, 'ordering_key' | 'sequence'> &
  LaneKeyColumns & { seq: string | null; position_us: string };

/**
 * Up to `limit` webhooks of `companyIds` matching `filter`, newest first, from a page position. The filter's own
 * company narrows the companies (a company not among them: no rows). Each company's newest rows are read from its
 * own index range, and only the page's rows are joined with their attempts and places.
 */
export async function listPartnerDeliveries(
  knex: Knex,
  atRest: DataAtRest,
  companyIds: readonly string[],
  filter: PartnerDeliveryFilter,
  { limit, after, before }: TwoWayPageRequest,
): Promise<PartnerDeliveryPage> {
  const companies = filter.companyId === undefined ? companyIds : companyIds.filter((id) => id === filter.companyId);
  if (companies.length === 0) return { webhooks: [] };
  const backwards = before !== undefined;
  const start = pageStart(after, before);
  const conditions = [filterConditions({ ...filter, companyId: undefined }, undefined, start)];
  if (filter.orderingKey !== undefined)
    conditions.push(placedInLaneOf('e.id', laneDigests(await indexKeysOf(knex, atRest), filter.orderingKey)));
  const order = raw(backwards ? 'created_at ASC, id ASC' : 'created_at DESC, id DESC');
  const rows = await runSql<Row>(
    knex,
    sql`SELECT e.id, e.event_id, e.event_type, e.action, e.company_id, ${LOG_STATUS_SQL} AS status,
               (SELECT count(*)::int FROM webhook_attempts a WHERE a.webhook_id = e.id) AS attempts,
               e.accepted_at, e.finished_at, e.is_test, e.redelivery_of, e.position_us,
               p.seq, l.key_digest, l.key_text, l.key_sealed, l.key_key_id
          FROM (SELECT picked.* FROM unnest(${[...companies]}::text[]) AS c(company_id)
                CROSS JOIN LATERAL (
                  SELECT e.id, e.event_id, e.event_type, e.action, e.company_id, e.status, e.held_since,
                         e.claimed_attempt, e.accepted_at, e.created_at, e.finished_at, e.is_test, e.redelivery_of,
                         ${POSITION} AS position_us
                    FROM webhook_events e
                   WHERE e.company_id = c.company_id AND ${joinSql(conditions, ' AND ')}
                   ORDER BY ${raw(`e.${backwards ? 'created_at ASC, e.id ASC' : 'created_at DESC, e.id DESC'}`)}
                   LIMIT ${limit + 1}) picked
                ORDER BY ${order} LIMIT ${limit + 1}) e
          LEFT JOIN ordering_places p ON p.webhook_id = e.id
          LEFT JOIN ordering_lanes l ON l.id = p.lane_id
         ORDER BY ${raw(backwards ? 'e.created_at ASC, e.id ASC' : 'e.created_at DESC, e.id DESC')}`,
  );
  const page = keysetPage(rows, limit);
  const webhooks = page.rows.map(asDelivery(atRest));
  const edge = (row: Row | undefined) => row && { createdAtUs: row.position_us, id: row.id };
  if (!backwards) {
    // Rows newer than this page exist when it started after a position: the row at that position at least.
    return { webhooks, next: edge(page.last), previous: after && edge(rows[0]) };
  }
  webhooks.reverse();
  return { webhooks, next: edge(rows[0]), previous: edge(page.last) };
}

function pageStart(after?: LogPosition, before?: LogPosition): SqlFragment | undefined {
  const position = (p: LogPosition) => ({ us: p.createdAtUs, id: p.id });
  if (before) return newerThan('e.created_at', 'e.id', 'uuid', position(before));
  if (after) return olderThan('e.created_at', 'e.id', 'uuid', position(after));
  return undefined;
}

const asDelivery =
  (atRest: DataAtRest) =>
  ({ seq, key_digest, key_text, key_sealed, key_key_id, ...row }: Omit<Row, 'position_us'>): PartnerDeliveryRow => ({
    ...row,
    ordering_key: seq === null ? null : openLaneKey(atRest, { key_digest, key_text, key_sealed, key_key_id }).key,
    sequence: seq === null ? null : Number(seq),
  });

/** Where one webhook stands, beyond its view: whose it is, its log status, its claim and its place in its lane. */
export interface DeliveryPosition {
  readonly companyId: string | null;
  readonly logStatus: LogStatus;
  /** The attempt number its last claim took (0: none yet). */
  readonly claimedAttempt: number;
  readonly orderingKey: string | null;
  readonly sequence: number | null;
  /** The nearest earlier unsettled webhook of its lane while its own place is unsettled: it wakes this one. */
  readonly queuedBehind: { readonly webhookId: string; readonly sequence: number } | null;
}

/** One webhook's position in one statement; undefined when there is no such webhook. */
export async function loadDeliveryPosition(
  knex: Knex,
  atRest: DataAtRest,
  webhookId: string,
): Promise<DeliveryPosition | undefined> {
  const [row] = await runSql<
    LaneKeyColumns & {
      company_id: string | null;
      status: LogStatus;
      claimed_attempt: number;
      seq: string | null;
      ahead_id: string | null;
      ahead_seq: string | null;
    }
  >(
    knex,
    sql`SELECT e.company_id, ${LOG_STATUS_SQL} AS status, e.claimed_attempt, p.seq,
               l.key_digest, l.key_text, l.key_sealed, l.key_key_id,
               ahead.webhook_id AS ahead_id, ahead.seq AS ahead_seq
          FROM webhook_events e
          LEFT JOIN ordering_places p ON p.webhook_id = e.id
          LEFT JOIN ordering_lanes l ON l.id = p.lane_id
          LEFT JOIN LATERAL (SELECT q.webhook_id, q.seq FROM ordering_places q
                              WHERE p.settled_at IS NULL AND q.lane_id = p.lane_id AND q.seq < p.seq
                                AND q.settled_at IS NULL
                              ORDER BY q.seq DESC LIMIT 1) ahead ON true
         WHERE e.id = ${webhookId}::uuid`,
  );
  if (!row) return undefined;
  return {
    companyId: row.company_id,
    logStatus: row.status,
    claimedAttempt: row.claimed_attempt,
    orderingKey: row.seq === null ? null : openLaneKey(atRest, row).key,
    sequence: row.seq === null ? null : Number(row.seq),
    queuedBehind: row.ahead_id ? { webhookId: row.ahead_id, sequence: Number(row.ahead_seq) } : null,
  };
}
