import type { Knex } from 'knex';
import { joinSql, prepared, raw, runSql, sql, type SqlFragment } from '../../db/sql';
import { keysetPage, microsecondsOf, olderThan, type PageRequest } from '../../db/keyset';
import {
  FINISHED_STATUSES,
  type EventAction,
  type EventType,
  type LogStatus,
  type SignedLinkKind,
  type WebhookStatus,
} from '../../lib/vocabulary';

// The delivery log: webhooks filtered and paged newest first, for operators and for bulk redelivery.

export interface WebhookFilter {
  readonly status?: LogStatus;
  readonly eventType?: EventType;
  readonly action?: EventAction;
  readonly companyId?: string;
  /** Created at or after. */
  readonly since?: Date;
  /** Created before. */
  readonly until?: Date;
}

/** Where a page ends: the creation time in microseconds (exact, unlike a JS Date) and the id of its last row. */
export interface LogPosition {
  readonly createdAtUs: string;
  readonly id: string;
}

/** The last attempt is recorded and the row still pending, not held: the delivery waits for its next attempt. */
const WAITING_SQL =
  `e.status = 'pending' AND e.held_since IS NULL AND EXISTS (SELECT 1 FROM webhook_attempts a WHERE a.webhook_id ` +
  `= e.id AND a.attempt >= e.claimed_attempt)`;
/** The next attempt waits for the partner gate to open (store/partner/partner-gate.ts). */
const HELD_SQL = `e.status = 'pending' AND e.held_since IS NOT NULL`;
/** A row's (alias `e`) position in the log's order: its creation time in microseconds. */
export const POSITION = microsecondsOf('e.created_at');
/**
 * A row's status in the log (row alias `e`): `held` and `waiting` split from `pending`; the ordering status uses it
 * too.
 */
export const LOG_STATUS_SQL = raw(
  `CASE WHEN ${HELD_SQL} THEN 'held' WHEN ${WAITING_SQL} THEN 'waiting' ELSE e.status END`,
);

/**
 * The filter's conditions (row alias `e`) and the page's start, joined with AND, every value bound. `start` is a
 * page start already made (the partner's list pages both ways); `after` the log's own, newest first.
 */
export function filterConditions(filter: WebhookFilter, after?: LogPosition, start?: SqlFragment): SqlFragment {
  const { status, eventType, action, companyId, since, until } = filter;
  // The page's start first: an index scan starts at the first bound it meets on the time.
  const conditions: SqlFragment[] = [
    start ?? (after ? olderThan('e.created_at', 'e.id', 'uuid', { us: after.createdAtUs, id: after.id }) : raw('true')),
  ];
  if (status === 'held') conditions.push(raw(HELD_SQL));
  else if (status === 'waiting') conditions.push(raw(WAITING_SQL));
  else if (status === 'pending')
    conditions.push(raw(`NOT (${WAITING_SQL}) AND e.status = 'pending' AND e.held_since IS NULL`));
  else if (status) conditions.push(sql`e.status = ${status}`);
  if (eventType) conditions.push(sql`e.event_type = ${eventType}`);
  if (action) conditions.push(sql`e.action = ${action}`);
  if (companyId !== undefined) conditions.push(sql`e.company_id = ${companyId}`);
  if (since) conditions.push(sql`e.created_at >= ${since.toISOString()}::timestamptz`);
  if (until) conditions.push(sql`e.created_at < ${until.toISOString()}::timestamptz`);
  return joinSql(conditions, ' AND ');
}

/** The log's order (row alias `e`), for an ORDER BY or a window. */
export const NEWEST_FIRST_ORDER = raw('e.created_at DESC, e.id DESC');
const NEWEST_FIRST = sql`ORDER BY ${NEWEST_FIRST_ORDER}`;

/** One line of the delivery log. */
export interface LoggedWebhook {
  readonly webhook_id: string;
  readonly event_id: string;
  readonly event_type: EventType;
  readonly action: EventAction;
  readonly company_id: string | null;
  readonly status: LogStatus;
  readonly attempts: number;
  /** The kinds of signed link that were past their deadline when the latest attempt was sent. */
  readonly expired_links: SignedLinkKind[];
  readonly redelivery_of: string | null;
  readonly is_test: boolean;
  readonly created_at: Date;
  readonly finished_at: Date | null;
}

/** Up to `limit` webhooks after `after`, newest first, and where the next page starts when there is one. */
export async function listWebhooks(
  knex: Knex,
  filter: WebhookFilter,
  { limit, after }: PageRequest<LogPosition>,
): Promise<{ webhooks: LoggedWebhook[]; next?: LogPosition }> {
  // One row more says whether a next page exists.
  const rows = await runSql<LoggedWebhook & { position_us: string }>(
    knex,
    sql`SELECT e.id AS webhook_id, e.event_id, e.event_type, e.action, e.company_id,
               ${LOG_STATUS_SQL} AS status,
               (SELECT count(*)::int FROM webhook_attempts a WHERE a.webhook_id = e.id) AS attempts,
               COALESCE((SELECT a.expired_links FROM webhook_attempts a WHERE a.webhook_id = e.id
                 ORDER BY a.attempt DESC LIMIT 1), '{}') AS expired_links,
               e.redelivery_of, e.is_test, e.created_at, e.finished_at, ${POSITION} AS position_us
          FROM webhook_events e WHERE ${filterConditions(filter, after)} ${NEWEST_FIRST} LIMIT ${limit + 1}`,
  );
  const page = keysetPage(rows, limit);
  return { webhooks: page.rows, next: page.last && { createdAtUs: page.last.position_us, id: page.last.webhook_id } };
}

/** How many deliveries wait on a retry timer now: the `waiting` status of the log. */
export async function countWaitingWebhooks(knex: Knex): Promise<number> {
  const [{ count }] = await runSql<{ count: number }>(
    knex,
    sql`SELECT count(*)::int AS count FROM webhook_events e WHERE ${raw(WAITING_SQL)}`,
  );
  return count;
}

/** What an operator's action on one webhook needs to know: its row status, whether it waits, its run. */
export interface OperableWebhook {
  readonly webhookId: string;
  readonly status: WebhookStatus;
  /** Pending with its last attempt recorded as failed: the next one is due. */
  readonly waiting: boolean;
  readonly workflowId: string | null;
  readonly runId: string | null;
  readonly redeliveryOf: string | null;
}

/** One webhook for an operation, in one query without its attempts; undefined when there is no such webhook. */
export async function findOperableWebhook(knex: Knex, webhookId: string): Promise<OperableWebhook | undefined> {
  const [row] = await runSql<{
    id: string;
    status: WebhookStatus;
    waiting: boolean;
    workflow_id: string | null;
    run_id: string | null;
    redelivery_of: string | null;
  }>(
    knex,
    // Named, so an operation's trace says which statement it ran.
    prepared(
      'find-operable-webhook',
      sql`SELECT e.id, e.status, (${raw(WAITING_SQL)}) AS waiting, e.workflow_id,
      e.run_id, e.redelivery_of FROM webhook_events e WHERE e.id = ${webhookId}`,
    ),
  );
  return (
    row && {
      webhookId: row.id,
      status: row.status,
      waiting: row.waiting,
      workflowId: row.workflow_id,
      runId: row.run_id,
      redeliveryOf: row.redelivery_of,
    }
  );
}

/** A finished webhook a bulk redelivery may send again: its id, and the original it (or its redelivery) stems from. */
export interface RedeliveryCandidate {
  readonly webhookId: string;
  readonly originalId: string;
}

/** The original a row (alias `e`) stems from: itself, or the webhook it redelivers. */
export const ORIGINAL_ID = raw('COALESCE(e.redelivery_of, e.id)');

/**
 * The rows (alias `e`) a bulk redelivery under `key` may send again, after `after`: finished, matching `filter`,
 * and their original has no started redelivery under `key`. The preview (store/webhooks/redelivery-preview.ts)
 * counts with the same conditions, so that its count is what the redelivery then starts.
 */
export function redeliveryCandidateConditions(filter: WebhookFilter, key: string, after?: LogPosition): SqlFragment {
  return sql`e.status = ANY(${FINISHED_STATUSES}::text[]) AND ${filterConditions(filter, after)}
           AND NOT EXISTS (SELECT 1 FROM webhook_events r WHERE r.redelivery_of = ${ORIGINAL_ID}
             AND r.redelivery_key = ${key} AND r.run_id IS NOT NULL)`;
}

/**
 * The next `limit` finished webhooks matching `filter` whose original has no started redelivery under `key`,
 * newest first after `after`. Redeliveries this run starts are pending, so they never match themselves.
 */
export async function findRedeliveryCandidates(
  knex: Knex,
  filter: WebhookFilter,
  key: string,
  { limit, after }: PageRequest<LogPosition>,
): Promise<{ candidates: RedeliveryCandidate[]; last?: LogPosition }> {
  const rows = await runSql<{ id: string; original_id: string; position_us: string }>(
    knex,
    sql`SELECT e.id, ${ORIGINAL_ID} AS original_id, ${POSITION} AS position_us
          FROM webhook_events e
         WHERE ${redeliveryCandidateConditions(filter, key, after)}
         ${NEWEST_FIRST} LIMIT ${limit}`,
  );
  const lastRow = rows.at(-1);
  return {
    candidates: rows.map((row) => ({ webhookId: row.id, originalId: row.original_id })),
    last: lastRow && { createdAtUs: lastRow.position_us, id: lastRow.id },
  };
}
