import { createHmac } from 'node:crypto';
import type { Knex } from 'knex';
import { prepared, raw, runSql, sql, type SqlFragment } from '../../db/sql';
import { openText, sealText, type DataAtRest } from '../../lib/at-rest';
import { eventSubjectKeys, type IndexKeys, type SubjectIndexKey } from '../../lib/subject-index';
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

/** What a lane's sealed key is bound to: its digest, so a key moved to another lane does not open there. */
export const laneKeyBinding = (digest: Buffer) => `ordering_lanes.key_sealed:${digest.toString('hex')}`;

/** A key's lane digests under every index key listed, the newest first: a lane made under any of them is the key's. */
export const laneDigests = (indexKeys: IndexKeys, orderingKey: string): Buffer[] =>
  indexKeys.searchUnder.map((indexKey) => laneDigest(indexKey, orderingKey));

/**
 * The key's lane among `digests`: the oldest one, so that every placement and every operator's command picks the
 * same lane even where two were made under two index keys (by a version that looked under the newest key only).
 */
const keysLane = (digests: readonly Buffer[]): SqlFragment =>
  sql`(SELECT id FROM ordering_lanes WHERE key_digest = ANY(${anyDigest(digests)}) ORDER BY id LIMIT 1)`;

/** Digests as one bytea[] parameter (the sql tag binds text arrays): hex, decoded by PostgreSQL. */
const anyDigest = (digests: readonly Buffer[]): SqlFragment =>
  sql`ARRAY(SELECT decode(d, 'hex') FROM unnest(${digests.map((digest) => digest.toString('hex'))}::text[]) d)`;

/** The webhook in `webhookColumn` has a place in a lane of `digests` (a key's: laneDigests), erased lanes aside. */
export const placedInLaneOf = (webhookColumn: string, digests: readonly Buffer[]): SqlFragment =>
  sql`EXISTS (SELECT 1 FROM ordering_places op JOIN ordering_lanes ol ON ol.id = op.lane_id
       WHERE op.webhook_id = ${raw(webhookColumn)} AND ol.key_digest = ANY(${anyDigest(digests)}))`;

/**
 * The CTEs that place the webhook written by CTE `created` (one row with `id`, or none) at the end of its key's
 * lane: `lane` raises the lane's last sequence (creating the lane), `placed` writes the place, `subjects` adds the
 * webhook's subject keys to the lane's. Nothing happens when `created` is empty, so a repeated event_id takes no
 * number. The lane is looked up under every listed index key (`found_lane`), so a key keeps its lane across an
 * index key rotation; only a key with none makes one, under the newest. Appended to a WITH list.
 */
export function placeInLaneCtes(
  atRest: DataAtRest,
  indexKeys: IndexKeys,
  orderingKey: string,
  subjectKeys: readonly string[],
): SqlFragment {
  const digests = laneDigests(indexKeys, orderingKey);
  const digest = laneDigest(indexKeys.writeWith, orderingKey);
  const key = sealText(atRest, orderingKey, laneKeyBinding(digest));
  // found_lane re-checks the digest on the row it locks: a lane an erasure cleared meanwhile is not taken.
  return sql`found_lane AS (
      UPDATE ordering_lanes l SET last_seq = l.last_seq + 1
       WHERE l.id = ${keysLane(digests)} AND l.key_digest = ANY(${anyDigest(digests)})
         AND EXISTS (SELECT 1 FROM created)
      RETURNING id, last_seq, key_digest, key_text, key_sealed, key_key_id
    ), made_lane AS (
      INSERT INTO ordering_lanes AS l (key_digest, key_text, key_sealed, key_key_id, index_key_id, last_seq)
      SELECT ${digest}::bytea, ${key.clear}::text, ${key.sealed}::bytea, ${key.keyId}::text,
             ${indexKeys.writeWith.id}::text, 1
        FROM created WHERE NOT EXISTS (SELECT 1 FROM found_lane)
      ON CONFLICT (key_digest) DO UPDATE SET last_seq = l.last_seq + 1
      RETURNING id, last_seq, key_digest, key_text, key_sealed, key_key_id
    ), lane AS (
      SELECT * FROM found_lane UNION ALL SELECT * FROM made_lane
    ), placed AS (
      INSERT INTO ordering_places (webhook_id, lane_id, seq) SELECT created.id, lane.id, lane.last_seq
        FROM created, lane
      RETURNING seq
    ), subjects AS (
      INSERT INTO ordering_lane_subjects (subject_key, lane_id, key_id)
      SELECT s.key, lane.id, ${indexKeys.writeWith.id}::text FROM lane, unnest(${subjectKeys}::text[]) s(key)
      ON CONFLICT DO NOTHING
    )`;
}

/** Where a webhook stands in its lane before its first attempt. */
export type LaneTurn =
  | { readonly kind: 'turn'; readonly sequence: number; readonly key: string }
  /** An earlier webhook of the key is unsettled: the nearest one, which wakes this one when it settles. */
  | {
      readonly kind: 'queued';
      readonly sequence: number;
      readonly behind: { readonly webhookId: string; readonly sequence: number };
    }
  /** No place: recorded with ordering off, or its lane's key was erased. Sent unordered. */
  | { readonly kind: 'unplaced' };

/**
 * Asks whether `webhook` may make its first attempt: true when no earlier place of its lane is unsettled. A
 * webhook whose row does not exist yet (a run another Temporal client started) is written and placed here. A
 * queued place is marked waiting, so the sweep can wake it should its wake be lost.
 */
export async function takeTurn(
  knex: Knex,
  atRest: DataAtRest,
  webhook: NewWebhook,
  orderingKey: string,
): Promise<LaneTurn> {
  await refuseClearWriteIfKeyed(knex, atRest);
  const indexKeys = await indexKeysOf(knex, atRest);
  const row = newWebhookRow(webhook, true, atRest, indexKeys.writeWith);
  let found = await askTurn(knex, atRest, indexKeys, row, webhook, orderingKey);
  // A place written by this statement was judged on the snapshot taken before the lane's lock, blind to places
  // committed meanwhile; and a settle running beside it could not see it to wake it. Asked again once committed,
  // it sees every earlier place, and any settle after this one sees it.
  if (found.newly_placed) found = await askTurn(knex, atRest, indexKeys, row, webhook, orderingKey);
  if (found.seq === null) return { kind: 'unplaced' };
  const sequence = Number(found.seq);
  if (found.behind_id === null) {
    // The key as the lane keeps it: a repeated event_id's request cannot change the key its first one placed.
    const lane = openLaneKey(atRest, found);
    if (lane.unreadable !== undefined)
      return { kind: 'turn', sequence, key: await rebuildLaneKey(knex, atRest, indexKeys, found, orderingKey) };
    return lane.key ? { kind: 'turn', sequence, key: lane.key } : { kind: 'unplaced' };
  }
  return { kind: 'queued', sequence, behind: { webhookId: found.behind_id, sequence: Number(found.behind_seq) } };
}

/** One statement of takeTurn: writes and places the row if it is new, then judges the turn on its snapshot. */
async function askTurn(
  knex: Knex,
  atRest: DataAtRest,
  indexKeys: IndexKeys,
  row: ReturnType<typeof newWebhookRow>,
  webhook: NewWebhook,
  orderingKey: string,
): Promise<TurnRow> {
  const { webhookId } = webhook;
  const [found] = await runSql<TurnRow>(
    knex,
    prepared(
      'take-turn',
      sql`WITH created AS (
        INSERT INTO webhook_events (${row.columns}) VALUES (${row.values}) ON CONFLICT DO NOTHING RETURNING id
      ), ${placeInLaneCtes(
        atRest,
        indexKeys,
        orderingKey,
        eventSubjectKeys(indexKeys.writeWith.key, webhook.event),
      )}, me AS (
        SELECT lane.id AS lane_id, placed.seq, lane.key_digest, lane.key_text, lane.key_sealed, lane.key_key_id
          FROM lane, placed
        UNION ALL
        SELECT p.lane_id, p.seq, l.key_digest, l.key_text, l.key_sealed, l.key_key_id
          FROM ordering_places p JOIN ordering_lanes l ON l.id = p.lane_id
         WHERE p.webhook_id = ${webhookId}::uuid AND p.settled_at IS NULL
      ), behind AS (
        SELECT p.webhook_id, p.seq FROM ordering_places p, me
         WHERE p.lane_id = me.lane_id AND p.seq < me.seq AND p.settled_at IS NULL
         ORDER BY p.seq DESC LIMIT 1
      ), waiting AS (
        UPDATE ordering_places SET waiting_since = CASE WHEN EXISTS (SELECT 1 FROM behind)
          THEN COALESCE(waiting_since, clock_timestamp()) END
         WHERE webhook_id = ${webhookId}::uuid AND EXISTS (SELECT 1 FROM me)
      )
      SELECT me.seq, me.key_digest, me.key_text, me.key_sealed, me.key_key_id, behind.webhook_id AS behind_id,
        behind.seq AS behind_seq,
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
        SELECT webhook_id, settled_at IS NULL AS open FROM ordering_places WHERE webhook_id = ${webhookId}::uuid
          FOR UPDATE
      ), settled AS (
        UPDATE ordering_places p
           SET settled_at = COALESCE(p.settled_at, clock_timestamp()), waiting_since = NULL, blocked_since = NULL,
             gap = p.gap OR (b.open AND ${gap}::boolean)
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
         WHERE q.waiting_since IS NOT NULL AND q.settled_at IS NULL
           AND q.waiting_since <= clock_timestamp() - ${waitedMs} * interval '1 millisecond'
           AND NOT EXISTS (SELECT 1 FROM ordering_places p WHERE p.lane_id = q.lane_id AND p.seq < q.seq
             AND p.settled_at IS NULL)
         ORDER BY q.waiting_since LIMIT ${limit}`,
  );
  return rows.map((row) => ({ webhookId: row.webhook_id, workflowId: row.workflow_id }));
}

/**
 * Ordered webhooks queued behind their key's head, how long the oldest of them has waited, and how long the
 * longest-blocked head has been blocked (seconds, 0 for none): the worker's gauges, one statement per scrape.
 */
export async function orderingBacklog(
  knex: Knex,
): Promise<{ readonly queued: number; readonly oldestQueuedSeconds: number; readonly oldestBlockedSeconds: number }> {
  const [row] = await runSql<{ queued: number; oldest_queued: number; oldest_blocked: number }>(
    knex,
    sql`SELECT count(*) FILTER (WHERE waiting_since IS NOT NULL)::int AS queued,
               coalesce(extract(epoch FROM clock_timestamp() - min(waiting_since)), 0)::float8 AS oldest_queued,
               coalesce(extract(epoch FROM clock_timestamp() - min(blocked_since)), 0)::float8 AS oldest_blocked
          FROM ordering_places WHERE (waiting_since IS NOT NULL OR blocked_since IS NOT NULL) AND settled_at IS NULL`,
  );
  return { queued: row.queued, oldestQueuedSeconds: row.oldest_queued, oldestBlockedSeconds: row.oldest_blocked };
}

/**
 * A webhook (row alias `w`) whose claimed attempt has no record yet: its POST may be under way (or its worker
 * was lost mid-POST). An erasure leaves such a webhook's place unsettled, so the next webhook of its key waits.
 */
export const ATTEMPT_IN_FLIGHT_SQL = raw(
  `(w.claimed_attempt > 0 AND NOT EXISTS (SELECT 1 FROM webhook_attempts a WHERE a.webhook_id = w.id AND ` +
    `a.attempt >= w.claimed_attempt))`,
);

/** The unsettled head of a lane that has kept a webhook queued for a while: its run may have ended unsettled. */
export interface StalledHead {
  readonly webhookId: string;
  readonly workflowId: string;
  /**
   * An erasure cancelled it while an attempt was in flight (ATTEMPT_IN_FLIGHT_SQL): how long ago, in ms, the
   * erasure did (its row's finish time); undefined when not erased, or when no attempt is in flight any more.
   */
  readonly erasedInFlightForMs?: number;
  /** An erasure cancelled it and no attempt of it is in flight: it settles without asking Temporal. */
  readonly erased: boolean;
}

/** Where the sweep's walk stands: the last queued place it looked at, in (waiting_since, webhook_id) order. */
export interface SweepCursor {
  /** waiting_since as PostgreSQL prints it, microseconds kept. */
  readonly since: string;
  readonly webhookId: string;
}

/**
 * One step of the sweep's walk over queued places, oldest wait first: the next `limit` places queued for
 * `waitedMs` or more after `after` (from the oldest when null), and the head of each lane among them once, at
 * the lane's first queued place behind its head. `next` is where the following step starts: null once the walk
 * reached the end, so it starts again from the oldest. One statement, at most `limit` places read.
 */
export async function stalledHeads(
  knex: Knex,
  waitedMs: number,
  after: SweepCursor | null,
  limit: number,
): Promise<{ heads: StalledHead[]; next: SweepCursor | null; examined: number }> {
  const rows = await runSql<{
    since: string;
    queued_id: string;
    head_id: string | null;
    workflow_id: string | null;
    erased: boolean | null;
    in_flight: boolean | null;
    erased_ms: number | null;
  }>(
    knex,
    prepared(
      'stalled-heads',
      sql`WITH walk AS (
        SELECT q.webhook_id, q.lane_id, q.seq, q.waiting_since FROM ordering_places q
         WHERE q.waiting_since IS NOT NULL AND q.settled_at IS NULL
           AND q.waiting_since <= clock_timestamp() - ${waitedMs} * interval '1 millisecond'
           AND q.waiting_since >= COALESCE(${after?.since ?? null}::timestamptz, '-infinity')
           AND (q.waiting_since, q.webhook_id) > (COALESCE(${after?.since ?? null}::timestamptz, '-infinity'),
             COALESCE(${after?.webhookId ?? null}::uuid, '00000000-0000-0000-0000-000000000000'))
         ORDER BY q.waiting_since, q.webhook_id LIMIT ${limit}
      )
      SELECT walk.waiting_since::text AS since, walk.webhook_id AS queued_id, head.*
        FROM walk
        JOIN LATERAL (SELECT p.webhook_id, p.seq FROM ordering_places p WHERE p.lane_id = walk.lane_id
          AND p.settled_at IS NULL ORDER BY p.seq LIMIT 1) h ON true
        -- The head's row, once per lane: at its first queued place behind the head. LIMIT 1 keeps it a lookup by id.
        LEFT JOIN LATERAL (
          SELECT w.id AS head_id, w.workflow_id, w.status_reason = 'erasure' AS erased,
            ${ATTEMPT_IN_FLIGHT_SQL} AS in_flight,
                 (extract(epoch FROM clock_timestamp() - w.finished_at) * 1000)::float8 AS erased_ms
            FROM webhook_events w
           WHERE w.id = h.webhook_id AND h.webhook_id <> walk.webhook_id
             AND NOT EXISTS (SELECT 1 FROM ordering_places o WHERE o.lane_id = walk.lane_id AND o.settled_at IS NULL
               AND o.waiting_since IS NOT NULL AND o.seq > h.seq AND o.seq < walk.seq)
           LIMIT 1
        ) head ON true
       ORDER BY walk.waiting_since, walk.webhook_id`,
    ),
  );
  const last = rows.at(-1);
  const heads = rows.flatMap((row): StalledHead[] => {
    if (!row.head_id || !row.workflow_id) return [];
    const erasedInFlight = row.erased === true && row.in_flight === true;
    return [
      {
        webhookId: row.head_id,
        workflowId: row.workflow_id,
        erased: row.erased === true && !erasedInFlight,
        ...(erasedInFlight && { erasedInFlightForMs: row.erased_ms ?? 0 }),
      },
    ];
  });
  return {
    heads,
    next: rows.length === limit && last ? { since: last.since, webhookId: last.queued_id } : null,
    examined: rows.length,
  };
}

/**
 * An ordered webhook's key and sequence number (a redelivery sends its original's); undefined when unordered,
 * erased, or when no listed key opens its lane's key (the redelivery then goes without them: docs/decisions.md).
 */
export async function placeOf(
  knex: Knex,
  atRest: DataAtRest,
  webhookId: string,
): Promise<{ key: string; sequence: number } | undefined> {
  return (await placesOf(knex, atRest, [webhookId])).get(webhookId);
}

/** placeOf of many webhooks in one statement: the ordered ones, by webhook id. */
export async function placesOf(
  knex: Knex,
  atRest: DataAtRest,
  webhookIds: readonly string[],
): Promise<Map<string, { key: string; sequence: number }>> {
  const rows = await runSql<LaneKeyColumns & { webhook_id: string; seq: number }>(
    knex,
    sql`SELECT p.webhook_id, p.seq, l.key_digest, l.key_text, l.key_sealed, l.key_key_id FROM ordering_places p
      JOIN ordering_lanes l ON l.id = p.lane_id
         WHERE p.webhook_id = ANY(${webhookIds}::uuid[])`,
  );
  const places = new Map<string, { key: string; sequence: number }>();
  for (const row of rows) {
    const { key } = openLaneKey(atRest, row);
    if (key) places.set(row.webhook_id, { key, sequence: Number(row.seq) });
  }
  return places;
}

/** One ordering key with an unsettled webhook: its head and what waits behind it. */
export interface OrderingKeyRow {
  readonly key: string | null;
  /** Why `key` is null although the lane has one: no listed key opens it (its next webhook rebuilds it). */
  readonly keyUnreadable?: string;
  readonly headWebhookId: string;
  readonly headSequence: number;
  /**
   * `blocked`, or the head's status in the delivery log: `pending` (attempting), `waiting` (for a retry), `held` (by
   * the partner gate).
   */
  readonly headStatus: string;
  readonly headAttempts: number;
  readonly queued: number;
  readonly oldestQueuedSince: Date | null;
  readonly gaps: number;
}

/** The keys with an unsettled webhook, the longest-waiting first (then by lane), at most `limit`. */
export async function orderingKeys(
  knex: Knex,
  atRest: DataAtRest,
  limit: number,
  { blockedOnly = false } = {},
): Promise<OrderingKeyRow[]> {
  const rows = await runSql<{
    key_digest: Buffer | null;
    key_text: string | null;
    key_sealed: Buffer | null;
    key_key_id: string | null;
    gaps: number;
    head_id: string;
    head_seq: number;
    head_status: string;
    head_attempts: number;
    queued: number;
    oldest: Date | null;
  }>(
    knex,
    sql`WITH open_lanes AS (SELECT DISTINCT lane_id FROM ordering_places WHERE settled_at IS NULL)
        SELECT l.key_digest, l.key_text, l.key_sealed, l.key_key_id, l.gaps::int AS gaps,
               h.webhook_id AS head_id, h.seq::int AS head_seq,
               CASE WHEN h.blocked_since IS NOT NULL THEN 'blocked' ELSE ${LOG_STATUS_SQL} END AS head_status,
               (SELECT count(*)::int FROM webhook_attempts a WHERE a.webhook_id = e.id) AS head_attempts,
               (SELECT count(*)::int FROM ordering_places q WHERE q.lane_id = l.id AND q.settled_at IS NULL
                 AND q.seq > h.seq) AS queued,
               (SELECT min(q.waiting_since) FROM ordering_places q WHERE q.lane_id = l.id AND q.settled_at IS NULL
                 AND q.seq > h.seq) AS oldest
          FROM open_lanes o
          JOIN ordering_lanes l ON l.id = o.lane_id
          JOIN LATERAL (SELECT p.webhook_id, p.seq, p.blocked_since FROM ordering_places p WHERE p.lane_id = l.id
            AND p.settled_at IS NULL ORDER BY p.seq LIMIT 1) h ON true
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

/**
 * A lane's key as its row holds it: the digest it is bound to, and the key in clear or sealed (all null once erased).
 */
export interface LaneKeyColumns {
  readonly key_digest: Buffer | null;
  readonly key_text: string | null;
  readonly key_sealed: Buffer | null;
  readonly key_key_id: string | null;
}

/**
 * A lane's key, opened: null once erased. `unreadable` (why, naming lane keys) when no listed key opens it: sealed
 * under a key a rotation removed before `keys reseal` reached it. Such a lane never stops delivery: see takeTurn.
 */
export function openLaneKey(
  atRest: DataAtRest,
  lane: LaneKeyColumns,
): { readonly key: string | null; readonly unreadable?: string } {
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
const laneKeyOf = ({ key, unreadable }: ReturnType<typeof openLaneKey>) => ({
  key,
  ...(unreadable !== undefined && { keyUnreadable: unreadable }),
});

/**
 * The key of a lane whose stored key no listed key opens, rebuilt from the webhook's own key (docs/decisions.md,
 * "Lane keys at rest"). The lane's digest is that key's HMAC under an index key: when the webhook's key gives the
 * lane's digest under a listed index key, it is the lane's key, and it is sealed again under the current key in
 * place (unless the row changed meanwhile: an erasure, a reseal). Unproven (a lane of another key), the webhook's
 * key goes with this attempt only and the lane is left as it is.
 */
async function rebuildLaneKey(
  knex: Knex,
  atRest: DataAtRest,
  indexKeys: IndexKeys,
  lane: LaneKeyColumns,
  orderingKey: string,
): Promise<string> {
  const digest = lane.key_digest!;
  const proven = [indexKeys.writeWith, ...indexKeys.searchUnder].some((indexKey) =>
    laneDigest(indexKey, orderingKey).equals(digest),
  );
  if (!proven) return orderingKey;
  const key = sealText(atRest, orderingKey, laneKeyBinding(digest));
  await runSql(
    knex,
    sql`UPDATE ordering_lanes SET key_text = ${key.clear}::text, key_sealed = ${key.sealed}::bytea,
      key_key_id = ${key.keyId}::text
         WHERE key_digest = ${digest}::bytea AND key_key_id IS NOT DISTINCT FROM ${lane.key_key_id}::text`,
  );
  return orderingKey;
}

/** Marks an ordered head blocked: it failed finally with WEBHOOK_ORDERING_ON_FAILURE=block. */
export async function blockPlace(knex: Knex, webhookId: string): Promise<void> {
  await runSql(
    knex,
    sql`UPDATE ordering_places SET blocked_since = COALESCE(blocked_since, clock_timestamp())
    WHERE webhook_id = ${webhookId}::uuid AND settled_at IS NULL`,
  );
}

/** A blocked head goes again (an operator's retry): no longer blocked unless that attempt fails too. */
export async function unblockPlace(knex: Knex, webhookId: string): Promise<void> {
  await runSql(knex, sql`UPDATE ordering_places SET blocked_since = NULL WHERE webhook_id = ${webhookId}::uuid`);
}

/**
 * The unsettled head of a key's lane, made under any listed index key: undefined when the key has no lane (or it
 * was erased); `head` null when nothing of it is unsettled.
 */
export async function headOfKey(
  knex: Knex,
  atRest: DataAtRest,
  orderingKey: string,
): Promise<{ head: { webhookId: string; workflowId: string; blocked: boolean } | null } | undefined> {
  const digests = laneDigests(await indexKeysOf(knex, atRest), orderingKey);
  const [row] = await runSql<{ head_id: string | null; workflow_id: string | null; blocked: boolean | null }>(
    knex,
    sql`SELECT h.webhook_id AS head_id, w.workflow_id, h.blocked_since IS NOT NULL AS blocked
          FROM ordering_lanes l
          LEFT JOIN LATERAL (SELECT p.webhook_id, p.blocked_since FROM ordering_places p WHERE p.lane_id = l.id
            AND p.settled_at IS NULL ORDER BY p.seq LIMIT 1) h ON true
          LEFT JOIN webhook_events w ON w.id = h.webhook_id
         WHERE l.id = ${keysLane(digests)}`,
  );
  if (!row) return undefined;
  return {
    head:
      row.head_id && row.workflow_id
        ? { webhookId: row.head_id, workflowId: row.workflow_id, blocked: row.blocked === true }
        : null,
  };
}
