import type { Knex } from 'knex';
import { z } from 'zod';
import type { DataAtRest } from '../../lib/at-rest';
import { zodPathErrors } from '../../lib/validation';
import { queryFlag, wholeCount } from '../../lib/keyset-paging';
import { FILTER_DETAIL, InvalidRequestError } from '../../lib/errors';
import { orderingKeys, type OrderingKeyRow } from '../../store/ordering/lanes';

// Where ordered webhooks stand, per key, for GET /internal/v1/ordering and `partner-service ordering status`.

export const DEFAULT_ORDERING_KEYS = 100;
export const MAX_ORDERING_KEYS = 1000;

/** The query string; the OpenAPI document's parameters are generated from it. */
export const orderingStatusQuery = z.strictObject({
  limit: wholeCount(MAX_ORDERING_KEYS).default(DEFAULT_ORDERING_KEYS),
  blocked: queryFlag.meta({
    description: '`true`: only keys whose head is blocked (WEBHOOK_ORDERING_ON_FAILURE=block).',
  }),
});

/**
 * What a key's head is doing: `attempting` (an attempt is being made, or due at once), `waiting` (for its next
 * retry), `held` (by the partner gate), `blocked` (failed finally; an operator skips or retries it), `stopped`
 * (its run ended outside the service; the ordering sweep settles it and the key goes on).
 */
export const HEAD_STATES = ['attempting', 'waiting', 'held', 'blocked', 'stopped'] as const;
export type HeadState = (typeof HEAD_STATES)[number];

export interface OrderingKeyStatus {
  /** Null once an erasure removed the key of a lane that still has webhooks of other subjects. */
  readonly key: string | null;
  /**
   * Only when `key` is null because no listed key opens the lane's key: why, and that the key's next webhook rebuilds
   * it.
   */
  readonly key_unreadable?: string;
  readonly head: {
    readonly webhook_id: string;
    readonly sequence: number;
    readonly state: HeadState;
    readonly attempts: number;
  };
  /** Webhooks of the key waiting behind the head. */
  readonly queued: number;
  /** How long the longest-waiting of them has waited, in seconds; null when none waits. */
  readonly oldest_queued_seconds: number | null;
  /** Webhooks of the key settled without a delivery so far: numbers the partner never received. */
  readonly gaps: number;
}

const HEAD_STATE_OF: Record<string, HeadState> = {
  pending: 'attempting',
  waiting: 'waiting',
  held: 'held',
  blocked: 'blocked',
};

/** The keys with an unsettled webhook, the longest-waiting first; throws InvalidRequestError for a bad query. */
export async function orderingStatus(
  knex: Knex,
  atRest: DataAtRest,
  query: Record<string, unknown>,
  now = new Date(),
): Promise<{ keys: OrderingKeyStatus[] }> {
  const parsed = orderingStatusQuery.safeParse(query);
  if (!parsed.success) throw new InvalidRequestError(zodPathErrors(parsed.error), FILTER_DETAIL);
  const rows = await orderingKeys(knex, atRest, parsed.data.limit, { blockedOnly: parsed.data.blocked });
  return { keys: rows.map((row) => keyStatus(row, now)) };
}

function keyStatus(row: OrderingKeyRow, now: Date): OrderingKeyStatus {
  return {
    key: row.key,
    ...(row.keyUnreadable !== undefined && {
      key_unreadable: `${row.keyUnreadable}; the next webhook of the key rebuilds it`,
    }),
    head: {
      webhook_id: row.headWebhookId,
      sequence: row.headSequence,
      state: HEAD_STATE_OF[row.headStatus] ?? 'stopped',
      attempts: row.headAttempts,
    },
    queued: row.queued,
    oldest_queued_seconds: row.oldestQueuedSince
      ? Math.max(0, Math.round((now.getTime() - row.oldestQueuedSince.getTime()) / 1000))
      : null,
    gaps: row.gaps,
  };
}
