import type { Knex } from 'knex';

/**
 * Lanes that know their subjects, so that none outlives its webhooks or its person (issue 56, docs/decisions.md
 * "Lanes know their subjects"):
 * - `ordering_lane_subjects`: the subject keys (HMACs, lib/subject-index.ts) of every webhook placed in a lane,
 *   with the index key each was made under. An erasure finds every lane of its subject by them, however its
 *   webhooks were found, and after the log purge took them. One row per subject and lane, not an array on the
 *   lane: a placement adds its webhook's keys without rewriting what the lane already knows.
 * - `ordering_lanes.index_key_id`: the subject index key its digest was taken under (null: before this
 *   migration), so `personal-data reindex` finds the lanes to move and a key is retired only once none is left.
 * Existing lanes learn their subjects from the places they still have, in batches of lanes; lanes with no place
 * left (their rows purged) are deleted, as the purge now does. No transaction, so each batch commits on its own
 * beside a running service: a failed run starts again where the rows say.
 */
export const config = { transaction: false };

const BATCH = 1000;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE IF NOT EXISTS ordering_lane_subjects (
      subject_key text NOT NULL,
      lane_id     bigint NOT NULL REFERENCES ordering_lanes (id) ON DELETE CASCADE,
      key_id      text,
      PRIMARY KEY (subject_key, lane_id)
    );
    CREATE INDEX IF NOT EXISTS ordering_lane_subjects_lane ON ordering_lane_subjects (lane_id, key_id);
    ALTER TABLE ordering_lanes ADD COLUMN IF NOT EXISTS index_key_id text;
  `);
  const { rows } = await knex.raw('SELECT coalesce(max(id), 0)::bigint AS max FROM ordering_lanes');
  const [{ max }] = rows as Array<{ max: string }>;
  for (let from = 0; from < Number(max); from += BATCH) {
    await knex.raw(
      `INSERT INTO ordering_lane_subjects (subject_key, lane_id, key_id)
       SELECT DISTINCT s.key, p.lane_id, w.subject_key_id
         FROM ordering_places p JOIN webhook_events w ON w.id = p.webhook_id, unnest(w.subject_keys) s(key)
        WHERE p.lane_id > ? AND p.lane_id <= ?
       ON CONFLICT DO NOTHING`,
      [from, from + BATCH],
    );
    // The lane's last_seq as read: a placement committed since changes it, and the lane stays.
    await knex.raw(
      `DELETE FROM ordering_lanes l USING (SELECT id, last_seq FROM ordering_lanes WHERE id > ? AND id <= ?) c
        WHERE l.id = c.id AND l.last_seq = c.last_seq
          AND NOT EXISTS (SELECT 1 FROM ordering_places p WHERE p.lane_id = l.id)`,
      [from, from + BATCH],
    );
  }
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS ordering_lane_subjects');
  await knex.raw('ALTER TABLE ordering_lanes DROP COLUMN IF EXISTS index_key_id');
}
