import type { Knex } from 'knex';
import { prepared, runSql, sql, type SqlFragment } from '../../db/sql';

// No lane outlives its webhooks (migration 025): a lane whose last place went with its webhook's row (the log
// purge, a start that certainly failed) is deleted, its key, digest and subjects with it.

/**
 * Deletes those of `lanes` with no place left. A lane is compared with its last_seq as this statement read it: one
 * that got a place since (a placement raises it, under the lane's row lock) keeps its row, and a placement in
 * flight makes the delete wait for it, then see the new last_seq.
 */
export const deleteEmptyLanesStatement = (lanes: readonly string[]): SqlFragment =>
  prepared(
    'delete-empty-lanes',
    sql`DELETE FROM ordering_lanes l USING (SELECT id, last_seq FROM ordering_lanes WHERE id = ANY(${lanes}::bigint[]))
      c
         WHERE l.id = c.id AND l.last_seq = c.last_seq
           AND NOT EXISTS (SELECT 1 FROM ordering_places p WHERE p.lane_id = l.id)`,
  );

export async function deleteEmptyLanes(knex: Knex, lanes: readonly string[]): Promise<void> {
  if (lanes.length) await runSql(knex, deleteEmptyLanesStatement(lanes));
}
