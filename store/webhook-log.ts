import type { Knex } from 'knex';
import { FINISHED_STATUSES, type EventAction, type EventType, type LogStatus, type SignedLinkKind, type WebhookStatus } from '../lib/vocabulary';

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
const WAITING_SQL = `e.status = 'pending' AND e.held_since IS NULL AND EXISTS (SELECT 1 FROM webhook_attempts a WHERE a.webhook_id = e.id AND a.attempt >= e.claimed_attempt)`;
/** The next attempt waits for the partner gate to open (store/partner-gate.ts). */
const HELD_SQL = `e.status = 'pending' AND e.held_since IS NOT NULL`;
const POSITION_SQL = `(extract(epoch FROM e.created_at) * 1000000)::bigint::text`;

function applyFilter(query: Knex.QueryBuilder, filter: WebhookFilter, after?: LogPosition): Knex.QueryBuilder {
  const { status, eventType, action, companyId, since, until } = filter;
  if (status === 'held') query.whereRaw(HELD_SQL);
  else if (status === 'waiting') query.whereRaw(WAITING_SQL);
  else if (status === 'pending') query.whereRaw(`NOT (${WAITING_SQL})`).where('e.status', 'pending').whereNull('e.held_since');
  else if (status) query.where('e.status', status);
  if (eventType) query.where('e.event_type', eventType);
  if (action) query.where('e.action', action);
  if (companyId !== undefined) query.where('e.company_id', companyId);
  if (since) query.where('e.created_at', '>=', since.toISOString());
  if (until) query.where('e.created_at', '<', until.toISOString());
  if (after) {
    query.whereRaw(`(e.created_at, e.id) < (timestamptz 'epoch' + ?::bigint * interval '1 microsecond', ?::uuid)`, [after.createdAtUs, after.id]);
  }
  return query.orderBy([{ column: 'e.created_at', order: 'desc' }, { column: 'e.id', order: 'desc' }]);
}

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
  { limit, after }: { limit: number; after?: LogPosition },
): Promise<{ webhooks: LoggedWebhook[]; next?: LogPosition }> {
  const rows = await applyFilter(
    knex({ e: 'webhook_events' }).select(
      'e.id as webhook_id',
      'e.event_id',
      'e.event_type',
      'e.action',
      'e.company_id',
      knex.raw(`CASE WHEN ${HELD_SQL} THEN 'held' WHEN ${WAITING_SQL} THEN 'waiting' ELSE e.status END AS status`),
      knex.raw('(SELECT count(*)::int FROM webhook_attempts a WHERE a.webhook_id = e.id) AS attempts'),
      knex.raw(`COALESCE((SELECT a.expired_links FROM webhook_attempts a WHERE a.webhook_id = e.id ORDER BY a.attempt DESC LIMIT 1), '{}') AS expired_links`),
      'e.redelivery_of',
      'e.is_test',
      'e.created_at',
      'e.finished_at',
      knex.raw(`${POSITION_SQL} AS position_us`),
    ),
    filter,
    after,
    // One row more says whether a next page exists.
  ).limit(limit + 1);
  const page: (LoggedWebhook & { position_us: string })[] = rows.slice(0, limit);
  const last = rows.length > limit ? page.at(-1) : undefined;
  return {
    webhooks: page.map(({ position_us: _position, ...row }) => row),
    next: last && { createdAtUs: last.position_us, id: last.webhook_id },
  };
}

/** How many deliveries wait on a retry timer now: the `waiting` status of the log. */
export async function countWaitingWebhooks(knex: Knex): Promise<number> {
  const [{ count }] = await knex({ e: 'webhook_events' }).whereRaw(WAITING_SQL).count<{ count: string }[]>({ count: '*' });
  return Number(count);
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
  const row = await knex({ e: 'webhook_events' })
    .select('e.id', 'e.status', knex.raw(`(${WAITING_SQL}) AS waiting`), 'e.workflow_id', 'e.run_id', 'e.redelivery_of')
    .where('e.id', webhookId)
    .first();
  return row && { webhookId: row.id, status: row.status, waiting: row.waiting, workflowId: row.workflow_id, runId: row.run_id, redeliveryOf: row.redelivery_of };
}

/** A finished webhook a bulk redelivery may send again: its id, and the original it (or its redelivery) stems from. */
export interface RedeliveryCandidate {
  readonly webhookId: string;
  readonly originalId: string;
}

/**
 * The next `limit` finished webhooks matching `filter` whose original has no started redelivery under `key`,
 * newest first after `after`. Redeliveries this run starts are pending, so they never match themselves.
 */
export async function findRedeliveryCandidates(
  knex: Knex,
  filter: WebhookFilter,
  key: string,
  { limit, after }: { limit: number; after?: LogPosition },
): Promise<{ candidates: RedeliveryCandidate[]; last?: LogPosition }> {
  const query = knex({ e: 'webhook_events' })
    .select('e.id', knex.raw('COALESCE(e.redelivery_of, e.id) AS original_id'), knex.raw(`${POSITION_SQL} AS position_us`))
    .whereIn('e.status', FINISHED_STATUSES)
    .whereNotExists(
      knex({ r: 'webhook_events' })
        .whereRaw('r.redelivery_of = COALESCE(e.redelivery_of, e.id)')
        .where('r.redelivery_key', key)
        .whereNotNull('r.run_id'),
    );
  const rows: { id: string; original_id: string; position_us: string }[] = await applyFilter(query, filter, after).limit(limit);
  const lastRow = rows.at(-1);
  return {
    candidates: rows.map((row) => ({ webhookId: row.id, originalId: row.original_id })),
    last: lastRow && { createdAtUs: lastRow.position_us, id: lastRow.id },
  };
}
