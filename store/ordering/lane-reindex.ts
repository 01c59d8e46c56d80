import type { Knex } from 'knex';
import { runSql, sql } from '../../db/sql';
import { openText, sealText, type DataAtRest } from '../../lib/at-rest';
import type { SubjectIndexKey } from '../../lib/subject-index';
import { StoredTextDecryptionError } from '../../lib/errors';
import { laneDigest, laneKeyBinding } from './lanes';

// `personal-data reindex` for lanes (migration 025): each lane's digest taken again under the newest index key (its
// sealed key bound to the new digest), and its subjects made again from the webhooks it still has. One short
// statement per batch of lanes, in id order; progress is the lanes themselves, so a killed run resumes.

interface LaneToReindex {
  readonly id: string;
  readonly key_digest: Buffer;
  readonly key_text: string | null;
  readonly key_sealed: Buffer | null;
  readonly key_key_id: string | null;
}

/** Up to `limit` keyed lanes after `after` whose digest is not known to be under `newestId`. */
export function lanesToReindex(knex: Knex, newestId: string, after: string, limit: number): Promise<LaneToReindex[]> {
  return runSql<LaneToReindex>(
    knex,
    sql`SELECT id, key_digest, key_text, key_sealed, key_key_id FROM ordering_lanes
         WHERE key_digest IS NOT NULL AND index_key_id IS DISTINCT FROM ${newestId} AND id > ${after}::bigint
         ORDER BY id LIMIT ${limit}`,
  );
}

/**
 * Moves `lanes` to `newest`: digest, key (sealed again for the new digest) and index key id. A lane an erasure
 * cleared or another run moved meanwhile (its digest no longer as read) is left; so is one whose new digest another
 * lane of the key holds (two lanes made under two index keys by an older version): the placement takes the older
 * of the two, and the other keeps its old digest until the purge removes it. A lane whose key no listed payload
 * key opens stays where it is (`unreadable`).
 */
export async function moveLanes(
  knex: Knex,
  atRest: DataAtRest,
  lanes: readonly LaneToReindex[],
  newest: SubjectIndexKey,
): Promise<{ moved: number; unreadable: number }> {
  let unreadable = 0;
  const moves = lanes.flatMap((lane) => {
    let key: string;
    try {
      const stored = { clear: lane.key_text, sealed: lane.key_sealed, keyId: lane.key_key_id };
      key = openText(atRest, stored, laneKeyBinding(lane.key_digest))!;
    } catch (error) {
      if (!(error instanceof StoredTextDecryptionError)) throw error;
      unreadable++;
      return [];
    }
    const digest = laneDigest(newest, key);
    const sealed = sealText(atRest, key, laneKeyBinding(digest));
    const move = { id: lane.id, from: lane.key_digest.toString('hex'), to: digest.toString('hex') };
    return [{ ...move, text: sealed.clear, sealed: sealed.sealed?.toString('base64') ?? null, key_id: sealed.keyId }];
  });
  if (moves.length === 0) return { moved: 0, unreadable };
  const moved = await runSql(
    knex,
    sql`UPDATE ordering_lanes l
           SET key_digest = decode(r.to, 'hex'), key_text = r.text, key_sealed = decode(r.sealed, 'base64'),
               key_key_id = r.key_id, index_key_id = ${newest.id}
          FROM json_to_recordset(${JSON.stringify(moves)}::json)
               AS r(id bigint, "from" text, "to" text, text text, sealed text, key_id text)
         WHERE l.id = r.id AND l.key_digest = decode(r.from, 'hex')
           AND NOT EXISTS (SELECT 1 FROM ordering_lanes o WHERE o.key_digest = decode(r.to, 'hex') AND o.id <> l.id)
     RETURNING l.id`,
  );
  return { moved: moved.length, unreadable };
}

/** Up to `limit` lanes after `after` that hold subjects made under another index key than `newestId`. */
export async function lanesWithOlderSubjects(knex: Knex, newestId: string, after: string, limit: number) {
  const rows = await runSql<{ lane_id: string }>(
    knex,
    sql`SELECT DISTINCT lane_id FROM ordering_lane_subjects
         WHERE key_id IS DISTINCT FROM ${newestId} AND lane_id > ${after}::bigint ORDER BY lane_id LIMIT ${limit}`,
  );
  return rows.map((row) => row.lane_id);
}

/**
 * Gives `lanes` the subjects of their webhooks as reindexed under `newestId`, and drops their older subjects
 * where nothing is lost: every webhook the lane ever placed is still there (as many places as its last number)
 * and indexed under the newest key. A lane that lost a webhook to the purge keeps the subjects only that webhook
 * gave it, and their key stays listed, until the purge takes the lane too.
 */
export async function remakeLaneSubjects(knex: Knex, lanes: readonly string[], newestId: string): Promise<void> {
  await runSql(
    knex,
    sql`WITH added AS (
          INSERT INTO ordering_lane_subjects (subject_key, lane_id, key_id)
          SELECT DISTINCT s.key, p.lane_id, w.subject_key_id
            FROM ordering_places p JOIN webhook_events w ON w.id = p.webhook_id, unnest(w.subject_keys) s(key)
           WHERE p.lane_id = ANY(${lanes}::bigint[]) AND w.subject_key_id = ${newestId}
          ON CONFLICT DO NOTHING
        ), whole AS (
          SELECT l.id FROM ordering_lanes l
           WHERE l.id = ANY(${lanes}::bigint[])
             AND l.last_seq = (SELECT count(*) FROM ordering_places p WHERE p.lane_id = l.id)
             AND NOT EXISTS (SELECT 1 FROM ordering_places p JOIN webhook_events w ON w.id = p.webhook_id
                              WHERE p.lane_id = l.id AND w.subject_keys <> '{}'
                                AND w.subject_key_id IS DISTINCT FROM ${newestId})
        )
        DELETE FROM ordering_lane_subjects s
         WHERE s.lane_id IN (SELECT id FROM whole) AND s.key_id IS DISTINCT FROM ${newestId}`,
  );
}

/** Lanes still under each index key other than `newestId` ('' for none recorded), by digest or by subjects. */
export async function lanesLeftByKey(knex: Knex, newestId: string): Promise<Record<string, number>> {
  const rows = await runSql<{ key_id: string; n: number }>(
    knex,
    sql`SELECT key_id, count(DISTINCT lane_id)::int AS n FROM (
          SELECT COALESCE(index_key_id, '') AS key_id, id AS lane_id FROM ordering_lanes
           WHERE key_digest IS NOT NULL AND index_key_id IS DISTINCT FROM ${newestId}
          UNION ALL
          SELECT COALESCE(key_id, ''), lane_id FROM ordering_lane_subjects WHERE key_id IS DISTINCT FROM ${newestId}
        ) left_behind GROUP BY 1 ORDER BY 1`,
  );
  return Object.fromEntries(rows.map((row) => [row.key_id, row.n]));
}
