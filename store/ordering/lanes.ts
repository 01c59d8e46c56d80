import { createHmac } from 'node:crypto';
import type { Knex } from 'knex';
import { prepared, runSql, sql, type SqlFragment } from '../../db/sql';
import { openText, sealText, type DataAtRest } from '../../lib/at-rest';
import type { SubjectIndexKey } from '../../lib/subject-index';
import { indexKeysOf } from '../personal-data/subject-index-keys';
import { refuseClearWriteIfKeyed } from '../personal-data/at-rest-settings';
import { newWebhookRow, type NewWebhook } from '../webhooks/webhook-rows';

// Per-entity ordering's SQL (migration 022): a webhook's place in its key's lane, written with its row; the
// turn, asked before its first attempt; the settling of a place, which names the webhook to wake.

/** A lane's identity: the key's HMAC under the subject index key, so no candidate id is stored in clear. */
export function laneDigest(indexKey: SubjectIndexKey, orderingKey: string): Buffer {
  return createHmac('sha256', indexKey.key).update(`ordering-key:${orderingKey}`, 'utf8').digest();
}

const laneKeyBinding = (digest: Buffer) => `ordering_lanes.key_sealed:${digest.toString('hex')}`;

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
  const indexKey = (await indexKeysOf(knex, atRest)).writeWith;
  const row = newWebhookRow(webhook, true, atRest, indexKey);
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
         WHERE p.webhook_id = ${webhook.webhookId}::uuid AND p.settled_at IS NULL
      ), behind AS (
        SELECT p.webhook_id, p.seq FROM ordering_places p, me
         WHERE p.lane_id = me.lane_id AND p.seq < me.seq AND p.settled_at IS NULL
         ORDER BY p.seq DESC LIMIT 1
      ), waiting AS (
        UPDATE ordering_places SET waiting_since = CASE WHEN EXISTS (SELECT 1 FROM behind) THEN COALESCE(waiting_since, clock_timestamp()) END
         WHERE webhook_id = ${webhook.webhookId}::uuid AND EXISTS (SELECT 1 FROM me)
      )
      SELECT me.seq, me.key_digest, me.key_text, me.key_sealed, me.key_key_id, behind.webhook_id AS behind_id, behind.seq AS behind_seq
        FROM (SELECT 1) one LEFT JOIN me ON true LEFT JOIN behind ON true`,
    ),
  );
  if (found.seq === null) return { kind: 'unplaced' };
  const sequence = Number(found.seq);
  if (found.behind_id === null) {
    // The key as the lane keeps it: a repeated event_id's request cannot change the key its first one placed.
    const key = found.key_digest && openText(atRest, { clear: found.key_text, sealed: found.key_sealed, keyId: found.key_key_id }, laneKeyBinding(found.key_digest));
    return key ? { kind: 'turn', sequence, key } : { kind: 'unplaced' };
  }
  return { kind: 'queued', sequence, behind: { webhookId: found.behind_id, sequence: Number(found.behind_seq) } };
}

interface TurnRow {
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

/**
 * Settles a webhook's place (delivered, finally failed, cancelled), with `gap` when it failed finally and the
 * lane goes on without it, and names the next unsettled webhook of its lane. Idempotent: a second call settles
 * nothing and names the same next webhook, so a lost wake is sent again.
 */
export async function settlePlace(knex: Knex, webhookId: string, gap: boolean): Promise<NextInLane | undefined> {
  const [next] = await runSql<{ webhook_id: string; workflow_id: string }>(
    knex,
    prepared(
      'settle-place',
      sql`WITH before AS (
        SELECT webhook_id, settled_at IS NULL AS open FROM ordering_places WHERE webhook_id = ${webhookId}::uuid FOR UPDATE
      ), settled AS (
        UPDATE ordering_places p
           SET settled_at = COALESCE(p.settled_at, clock_timestamp()), waiting_since = NULL, gap = p.gap OR (b.open AND ${gap}::boolean)
          FROM before b WHERE p.webhook_id = b.webhook_id
        RETURNING p.lane_id, p.seq, b.open AND ${gap}::boolean AS counted
      ), counted AS (
        UPDATE ordering_lanes SET gaps = gaps + 1 WHERE id = (SELECT lane_id FROM settled WHERE counted)
      )
      SELECT p.webhook_id, w.workflow_id FROM settled s
        JOIN ordering_places p ON p.lane_id = s.lane_id AND p.seq > s.seq AND p.settled_at IS NULL
        JOIN webhook_events w ON w.id = p.webhook_id
       ORDER BY p.seq LIMIT 1`,
    ),
  );
  return next && { webhookId: next.webhook_id, workflowId: next.workflow_id };
}
