import { createHmac } from 'node:crypto';
import type { Knex } from 'knex';
import { prepared, runSql, sql, type SqlFragment } from '../../db/sql';
import { openText, sealText, type DataAtRest } from '../../lib/at-rest';
import type { IndexKeys, SubjectIndexKey } from '../../lib/subject-index';
import { StoredTextDecryptionError } from '../../lib/errors';
import { indexKeysOf } from '../personal-data/subject-index-keys';
import { refuseClearWriteIfKeyed } from '../personal-data/at-rest-settings';
import { newWebhookRow, type NewWebhook } from '../webhooks/webhook-rows';
import { LOG_STATUS_SQL } from '../webhooks/delivery-log';

// Per-entity ordering's SQL (migration 022): a webhook's place in its key's lane, written with its row; the
// turn, asked before its first attempt; the settling of a place, which names the webhook to wake.

/** A lane's identity: the key's HMAC under the subject index key, so no candidate id is stored in clear. */
export function laneDigest(indexKey: SubjectIndexKey, orderingKey: string): Buffer {
  return createHmac('sha256', indexKey.key).update(`ordering-key:${orderingKey}`, 'utf8').digest();
}

export const laneKeyBinding = (digest: Buffer) => `ordering_lanes.key_sealed:${digest.toString('hex')}`;

/**
 * The CTEs that place the webhook written by CTE `created` (one row with `id`, or none) at the end of its key's
 * lane: `lane` raises the lane's last sequence (creating the lane), `placed` writes the place. Nothing happens
 * when `created` is empty, so a repeated event_id takes no number. Appended to a WITH list.
 */
export function placeInLaneCtes(atRest: DataAtRest, indexKey: SubjectIndexKey, orderingKey: string): SqlFragment {
  const digest = laneDigest(indexKey, orderingKey);
  const key = sealText(atRest, orderingKey, laneKeyBinding(digest));
  return sql`lane AS (
      INSERT INTO ordering_lanes AS l (key_digest, key_text, key_sealed, key_key_id, last_seq)
      SELECT ${digest}::bytea, ${key.clear}::text, ${key.sealed}::bytea, ${key.keyId}::text, 1 FROM created
      ON CONFLICT (key_digest) DO UPDATE SET last_seq = l.last_seq + 1
      RETURNING id, last_seq, key_digest, key_text, key_sealed, key_key_id
    ), placed AS (
      INSERT INTO ordering_places (webhook_id, lane_id, seq) SELECT created.id, lane.id, lane.last_seq FROM created, lane
      RETURNING seq
    )`;
}

/** Where a webhook stands in its lane before its first attempt. */
export type LaneTurn =
  | { readonly kind: 'turn'; readonly sequence: number; readonly key: string }
  /** An earlier webhook of the key is unsettled: the nearest one, which wakes this one when it settles. */
  | { readonly kind: 'queued'; readonly sequence: number; readonly behind: { readonly webhookId: string; readonly sequence: number } }
  /** No place: recorded with ordering off, or its lane's key was erased. Sent unordered. */
  | { readonly kind: 'unplaced' };

/**
 * Asks whether `webhook` may make its first attempt: true when no earlier place of its lane is unsettled. A
 * webhook whose row does not exist yet (a run another Temporal client started) is written and placed here. A
 * queued place is marked waiting, so the sweep can wake it should its wake be lost.
 */
export async function takeTurn(knex: Knex, atRest: DataAtRest, webhook: NewWebhook, orderingKey: string): Promise<LaneTurn> {
  await refuseClearWriteIfKeyed(knex, atRest);
  const indexKeys = await indexKeysOf(knex, atRest);
  const indexKey = indexKeys.writeWith;
  const row = newWebhookRow(webhook, true, atRest, indexKey);
  let found = await askTurn(knex, atRest, indexKey, row, webhook.webhookId, orderingKey);
  // A place written by this statement was judged on the snapshot taken before the lane's lock, blind to places
  // committed meanwhile; and a settle running beside it could not see it to wake it. Asked again once committed,
  // it sees every earlier place, and any settle after this one sees it.
  if (found.newly_placed) found = await askTurn(knex, atRest, indexKey, row, webhook.webhookId, orderingKey);
  if (found.seq === null) return { kind: 'unplaced' };
  const sequence = Number(found.seq);
  if (found.behind_id === null) {
    // The key as the lane keeps it: a repeated event_id's request cannot change the key its first one placed.
    const lane = openLaneKey(atRest, found);
    if (lane.unreadable !== undefined) return { kind: 'turn', sequence, key: await rebuildLaneKey(knex, atRest, indexKeys, found, orderingKey) };
    return lane.key ? { kind: 'turn', sequence, key: lane.key } : { kind: 'unplaced' };
  }
  return { kind: 'queued', sequence, behind: { webhookId: found.behind_id, sequence: Number(found.behind_seq) } };
}

/** One statement of takeTurn: writes and places the row if it is new, then judges the turn on its snapshot. */
async function askTurn(knex: Knex, atRest: DataAtRest, indexKey: SubjectIndexKey, row: ReturnType<typeof newWebhookRow>, webhookId: string, orderingKey: string): Promise<TurnRow> {
  const [found] = await runSql<TurnRow>(
    knex,
    prepared(
      'take-turn',
      sql`WITH created AS (
        INSERT INTO webhook_events (${row.columns}) VALUES (${row.values}) ON CONFLICT DO NOTHING RETURNING id
      ), ${placeInLaneCtes(atRest, indexKey, orderingKey)}, me AS (
        SELECT lane.id AS lane_id, placed.seq, lane.key_digest, lane.key_text, lane.key_sealed, lane.key_key_id FROM lane, placed
        UNION ALL
        SELECT p.lane_id, p.seq, l.key_digest, l.key_text, l.key_sealed, l.key_key_id
          FROM ordering_places p JOIN ordering_lanes l ON l.id = p.lane_id
         WHERE p.webhook_id = ${webhookId}::uuid AND p.settled_at IS NULL
      ), behind AS (
        SELECT p.webhook_id, p.seq FROM ordering_places p, me
         WHERE p.lane_id = me.lane_id AND p.seq < me.seq AND p.settled_at IS NULL
         ORDER BY p.seq DESC LIMIT 1
      ), waiting AS (
        UPDATE ordering_places SET waiting_since = CASE WHEN EXISTS (SELECT 1 FROM behind) THEN COALESCE(waiting_since, clock_timestamp()) END
         WHERE webhook_id = ${webhookId}::uuid AND EXISTS (SELECT 1 FROM me)
      )
      SELECT me.seq, me.key_digest, me.key_text, me.key_sealed, me.key_key_id, behind.webhook_id AS behind_id, behind.seq AS behind_seq,
             EXISTS (SELECT 1 FROM placed) AS newly_placed
        FROM (SELECT 1) one LEFT JOIN me ON true LEFT JOIN behind ON true`,
    ),
  );
  return found;
}

interface TurnRow {
  newly_placed: boolean;
  seq: string | null;
  key_digest: Buffer | null;
  key_text: string | null;
  key_sealed: Buffer | null;
  key_key_id: string | null;
  behind_id: string | null;
  behind_seq: string | null;
}

/** The webhook to wake once a place settles: the next unsettled place of its lane. */
export interface NextInLane {
  readonly webhookId: string;
  readonly workflowId: string;
}

/** A settled place: whether this call recorded its gap (a repeated settle records none), and the webhook to wake. */
export interface SettledPlace {
  readonly gapRecorded: boolean;
  readonly next: NextInLane | undefined;
}

/**
 * Settles a webhook's place (delivered, finally failed, cancelled), with `gap` when it was not delivered and the
 * lane goes on without it, and names the next unsettled webhook of its lane. Idempotent: a second call settles
 * and counts nothing and names the same next webhook, so a lost wake is sent again.
 */
export async function settlePlace(knex: Knex, webhookId: string, gap: boolean): Promise<SettledPlace> {
  const [row] = await runSql<{ counted: boolean; webhook_id: string | null; workflow_id: string | null }>(
    knex,
    prepared(
      'settle-place',
      sql`WITH before AS (
        SELECT webhook_id, settled_at IS NULL AS open FROM ordering_places WHERE webhook_id = ${webhookId}::uuid FOR UPDATE
      ), settled AS (
        UPDATE ordering_places p
           SET settled_at = COALESCE(p.settled_at, clock_timestamp()), waiting_since = NULL, blocked_since = NULL, gap = p.gap OR (b.open AND ${gap}::boolean)
          FROM before b WHERE p.webhook_id = b.webhook_id
        RETURNING p.lane_id, p.seq, b.open AND ${gap}::boolean AS counted
      ), counted AS (
        UPDATE ordering_lanes SET gaps = gaps + 1 WHERE id = (SELECT lane_id FROM settled WHERE counted)
      )
      SELECT s.counted, n.webhook_id, n.workflow_id FROM settled s
        LEFT JOIN LATERAL (
          SELECT p.webhook_id, w.workflow_id FROM ordering_places p JOIN webhook_events w ON w.id = p.webhook_id
           WHERE p.lane_id = s.lane_id AND p.seq > s.seq AND p.settled_at IS NULL
           ORDER BY p.seq LIMIT 1
        ) n ON true`,
    ),
  );
  return {
    gapRecorded: row?.counted ?? false,
    next: row?.webhook_id && row.workflow_id ? { webhookId: row.webhook_id, workflowId: row.workflow_id } : undefined,
  };
}

/**
 * Queued webhooks that have waited `waitedMs` or more with nothing unsettled ahead of them any more: their wake
 * was lost (a worker gone between settling and signalling, Temporal unreachable, a row ahead removed).
 */
export async function lostWakes(knex: Knex, waitedMs: number, limit: number): Promise<NextInLane[]> {
  const rows = await runSql<{ webhook_id: string; workflow_id: string }>(
    knex,
    sql`SELECT q.webhook_id, w.workflow_id FROM ordering_places q JOIN webhook_events w ON w.id = q.webhook_id
         WHERE q.waiting_since IS NOT NULL AND q.settled_at IS NULL AND q.waiting_since <= clock_timestamp() - ${waitedMs} * interval '1 millisecond'
           AND NOT EXISTS (SELECT 1 FROM ordering_places p WHERE p.lane_id = q.lane_id AND p.seq < q.seq AND p.settled_at IS NULL)
         ORDER BY q.waiting_since LIMIT ${limit}`,
  );
  return rows.map((row) => ({ webhookId: row.webhook_id, workflowId: row.workflow_id }));
}

/**
 * Ordered webhooks queued behind their key's head, how long the oldest of them has waited, and how long the
 * longest-blocked head has been blocked (seconds, 0 for none): the worker's gauges, one statement per scrape.
 */
export async function orderingBacklog(knex: Knex): Promise<{ readonly queued: number; readonly oldestQueuedSeconds: number; readonly oldestBlockedSeconds: number }> {
  const [row] = await runSql<{ queued: number; oldest_queued: number; oldest_blocked: number }>(
    knex,
    sql`SELECT count(*) FILTER (WHERE waiting_since IS NOT NULL)::int AS queued,
               coalesce(extract(epoch FROM clock_timestamp() - min(waiting_since)), 0)::float8 AS oldest_queued,
               coalesce(extract(epoch FROM clock_timestamp() - min(blocked_since)), 0)::float8 AS oldest_blocked
          FROM ordering_places WHERE (waiting_since IS NOT NULL OR blocked_since IS NOT NULL) AND settled_at IS NULL`,
  );
  return { queued: row.queued, oldestQueuedSeconds: row.oldest_queued, oldestBlockedSeconds: row.oldest_blocked };
}

/** The unsettled head of a lane that has kept a webhook queued for a while: its run may have been stopped. */
export interface StalledHead {
  readonly webhookId: string;
  readonly eventId: string;
  readonly workflowId: string;
  readonly runId: string | null;
  readonly isTest: boolean;
}

/**
 * The heads of lanes in which a webhook has been queued for `waitedMs` or more: a run terminated in Temporal UI
 * (or timed out) runs no code, so nothing settles its place; the sweep asks Temporal about each.
 */
export async function stalledHeads(knex: Knex, waitedMs: number, limit: number): Promise<StalledHead[]> {
  const rows = await runSql<{ id: string; event_id: string; workflow_id: string; run_id: string | null; is_test: boolean }>(
    knex,
    sql`SELECT DISTINCT w.id, w.event_id, w.workflow_id, w.run_id, w.is_test
          FROM ordering_places q
          JOIN LATERAL (SELECT p.webhook_id FROM ordering_places p WHERE p.lane_id = q.lane_id AND p.settled_at IS NULL ORDER BY p.seq LIMIT 1) h ON true
          JOIN webhook_events w ON w.id = h.webhook_id
         WHERE q.waiting_since IS NOT NULL AND q.settled_at IS NULL AND h.webhook_id <> q.webhook_id
           AND q.waiting_since <= clock_timestamp() - ${waitedMs} * interval '1 millisecond'
         LIMIT ${limit}`,
  );
  return rows.map((row) => ({ webhookId: row.id, eventId: row.event_id, workflowId: row.workflow_id, runId: row.run_id, isTest: row.is_test }));
}

/**
 * An ordered webhook's key and sequence number (a redelivery sends its original's); undefined when unordered,
 * erased, or when no listed key opens its lane's key (the redelivery then goes without them: docs/decisions.md).
 */
export async function placeOf(knex: Knex, atRest: DataAtRest, webhookId: string): Promise<{ key: string; sequence: number } | undefined> {
  const [row] = await runSql<{ seq: number; key_digest: Buffer | null; key_text: string | null; key_sealed: Buffer | null; key_key_id: string | null }>(
    knex,
    sql`SELECT p.seq, l.key_digest, l.key_text, l.key_sealed, l.key_key_id FROM ordering_places p JOIN ordering_lanes l ON l.id = p.lane_id
         WHERE p.webhook_id = ${webhookId}::uuid`,
  );
  const key = row && openLaneKey(atRest, row).key;
  return key ? { key, sequence: Number(row.seq) } : undefined;
}

/** One ordering key with an unsettled webhook: its head and what waits behind it. */
export interface OrderingKeyRow {
  readonly key: string | null;
  /** Why `key` is null although the lane has one: no listed key opens it (its next webhook rebuilds it). */
  readonly keyUnreadable?: string;
  readonly headWebhookId: string;
  readonly headSequence: number;
  /** `blocked`, or the head's status in the delivery log: `pending` (attempting), `waiting` (for a retry), `held` (by the partner gate). */
  readonly headStatus: string;
  readonly headAttempts: number;
  readonly queued: number;
  readonly oldestQueuedSince: Date | null;
  readonly gaps: number;
}

/** The keys with an unsettled webhook, the longest-waiting first (then by lane), at most `limit`. */
export async function orderingKeys(knex: Knex, atRest: DataAtRest, limit: number, { blockedOnly = false } = {}): Promise<OrderingKeyRow[]> {
  const rows = await runSql<{
    key_digest: Buffer | null; key_text: string | null; key_sealed: Buffer | null; key_key_id: string | null; gaps: number;
    head_id: string; head_seq: number; head_status: string; head_attempts: number; queued: number; oldest: Date | null;
  }>(
    knex,
    sql`WITH open_lanes AS (SELECT DISTINCT lane_id FROM ordering_places WHERE settled_at IS NULL)
        SELECT l.key_digest, l.key_text, l.key_sealed, l.key_key_id, l.gaps::int AS gaps,
               h.webhook_id AS head_id, h.seq::int AS head_seq,
               CASE WHEN h.blocked_since IS NOT NULL THEN 'blocked' ELSE ${LOG_STATUS_SQL} END AS head_status,
               (SELECT count(*)::int FROM webhook_attempts a WHERE a.webhook_id = e.id) AS head_attempts,
               (SELECT count(*)::int FROM ordering_places q WHERE q.lane_id = l.id AND q.settled_at IS NULL AND q.seq > h.seq) AS queued,
               (SELECT min(q.waiting_since) FROM ordering_places q WHERE q.lane_id = l.id AND q.settled_at IS NULL AND q.seq > h.seq) AS oldest
          FROM open_lanes o
          JOIN ordering_lanes l ON l.id = o.lane_id
          JOIN LATERAL (SELECT p.webhook_id, p.seq, p.blocked_since FROM ordering_places p WHERE p.lane_id = l.id AND p.settled_at IS NULL ORDER BY p.seq LIMIT 1) h ON true
          JOIN webhook_events e ON e.id = h.webhook_id
         WHERE NOT ${blockedOnly}::boolean OR h.blocked_since IS NOT NULL
         ORDER BY oldest NULLS LAST, l.id
         LIMIT ${limit}`,
  );
  return rows.map((row) => ({
    ...laneKeyOf(openLaneKey(atRest, row)),
    headWebhookId: row.head_id,
    headSequence: row.head_seq,
    headStatus: row.head_status,
    headAttempts: row.head_attempts,
    queued: row.queued,
    oldestQueuedSince: row.oldest,
    gaps: row.gaps,
  }));
}

/** A lane's key as its row holds it: the digest it is bound to, and the key in clear or sealed (all null once erased). */
interface LaneKeyColumns {
  readonly key_digest: Buffer | null;
  readonly key_text: string | null;
  readonly key_sealed: Buffer | null;
  readonly key_key_id: string | null;
}

/**
 * A lane's key, opened: null once erased. `unreadable` (why, naming lane keys) when no listed key opens it: sealed
 * under a key a rotation removed before `keys reseal` reached it. Such a lane never stops delivery: see takeTurn.
 */
function openLaneKey(atRest: DataAtRest, lane: LaneKeyColumns): { readonly key: string | null; readonly unreadable?: string } {
  if (!lane.key_digest) return { key: null };
  const stored = { clear: lane.key_text, sealed: lane.key_sealed, keyId: lane.key_key_id };
  try {
    return { key: openText(atRest, stored, laneKeyBinding(lane.key_digest), 'an ordering lane key') };
  } catch (error) {
    if (!(error instanceof StoredTextDecryptionError)) throw error;
    return { key: null, unreadable: error.message };
  }
}

/** orderingKeys' view of a lane's key: the key, or null and why. */
const laneKeyOf = ({ key, unreadable }: ReturnType<typeof openLaneKey>) => ({ key, ...(unreadable !== undefined && { keyUnreadable: unreadable }) });

/**
 * The key of a lane whose stored key no listed key opens, rebuilt from the webhook's own key (docs/decisions.md,
 * "Lane keys at rest"). The lane's digest is that key's HMAC under an index key: when the webhook's key gives the
 * lane's digest under a listed index key, it is the lane's key, and it is sealed again under the current key in
 * place (unless the row changed meanwhile: an erasure, a reseal). Unproven (a lane of another key), the webhook's
 * key goes with this attempt only and the lane is left as it is.
 */
async function rebuildLaneKey(knex: Knex, atRest: DataAtRest, indexKeys: IndexKeys, lane: LaneKeyColumns, orderingKey: string): Promise<string> {
  const digest = lane.key_digest!;
  const proven = [indexKeys.writeWith, ...indexKeys.searchUnder].some((indexKey) => laneDigest(indexKey, orderingKey).equals(digest));
  if (!proven) return orderingKey;
  const key = sealText(atRest, orderingKey, laneKeyBinding(digest));
  await runSql(
    knex,
    sql`UPDATE ordering_lanes SET key_text = ${key.clear}::text, key_sealed = ${key.sealed}::bytea, key_key_id = ${key.keyId}::text
         WHERE key_digest = ${digest}::bytea AND key_key_id IS NOT DISTINCT FROM ${lane.key_key_id}::text`,
  );
  return orderingKey;
}

/** Marks an ordered head blocked: it failed finally with WEBHOOK_ORDERING_ON_FAILURE=block. */
export async function blockPlace(knex: Knex, webhookId: string): Promise<void> {
  await runSql(knex, sql`UPDATE ordering_places SET blocked_since = COALESCE(blocked_since, clock_timestamp()) WHERE webhook_id = ${webhookId}::uuid AND settled_at IS NULL`);
}

/** A blocked head goes again (an operator's retry): no longer blocked unless that attempt fails too. */
export async function unblockPlace(knex: Knex, webhookId: string): Promise<void> {
  await runSql(knex, sql`UPDATE ordering_places SET blocked_since = NULL WHERE webhook_id = ${webhookId}::uuid`);
}

/** The unsettled head of a key's lane: undefined when the key has no lane (or it was erased); `head` null when nothing of it is unsettled. */
export async function headOfKey(
  knex: Knex,
  atRest: DataAtRest,
  orderingKey: string,
): Promise<{ head: { webhookId: string; workflowId: string; blocked: boolean } | null } | undefined> {
  const digest = laneDigest((await indexKeysOf(knex, atRest)).writeWith, orderingKey);
  const [row] = await runSql<{ head_id: string | null; workflow_id: string | null; blocked: boolean | null }>(
    knex,
    sql`SELECT h.webhook_id AS head_id, w.workflow_id, h.blocked_since IS NOT NULL AS blocked
          FROM ordering_lanes l
          LEFT JOIN LATERAL (SELECT p.webhook_id, p.blocked_since FROM ordering_places p WHERE p.lane_id = l.id AND p.settled_at IS NULL ORDER BY p.seq LIMIT 1) h ON true
          LEFT JOIN webhook_events w ON w.id = h.webhook_id
         WHERE l.key_digest = ${digest}::bytea`,
  );
  if (!row) return undefined;
  return { head: row.head_id && row.workflow_id ? { webhookId: row.head_id, workflowId: row.workflow_id, blocked: row.blocked === true } : null };
}
