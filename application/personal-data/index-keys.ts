import type { Knex } from 'knex';
import type { Config } from '../../lib/config';
import { dataAtRest, type DataAtRest } from '../../lib/at-rest';
import { eventSubjectKeys, type SubjectIndexKey } from '../../lib/subject-index';
import {
  lanesLeftByKey,
  lanesToReindex,
  lanesWithOlderSubjects,
  moveLanes,
  remakeLaneSubjects,
} from '../../store/ordering/lane-reindex';
import {
  indexKeysOf,
  registerDevelopmentIndexKey,
  registeredIndexKeys,
  retireIndexKeys,
} from '../../store/personal-data/subject-index-keys';
import { rekeyRows, rowsLeftByKey, rowsToReindex } from '../../store/personal-data/subject-reindex';
import { openBody } from '../../store/webhooks/webhook-rows';
import { StoredTextDecryptionError } from '../../lib/errors';

// The subject index's keys as operators handle them: `start`'s development mode, and the reindex to the newest key.

/** Rows one batch reads and writes: one short transaction each, beside ingestion. */
/**
 * `start`'s development mode: a process given no index key uses the development key, registered here, which
 * only a deployment that never had a key accepts (store/personal-data/subject-index-keys.ts).
 */
export async function useDevelopmentIndexKeyWhenUnkeyed(knex: Knex, config: Config): Promise<void> {
  if (!dataAtRest(config).subjectKeys.length) await registerDevelopmentIndexKey(knex);
}

export const REINDEX_BATCH = 500;

/** What a reindex did, as `partner-service personal-data reindex` prints it. */
export interface ReindexSummary {
  readonly index_key_id: string;
  readonly rows_reindexed: number;
  /** Rows whose body no listed payload key opens: left under their key (list that key, and run again). */
  readonly rows_unreadable: number;
  /** Rows left under each older key id ('' before key ids), their bodies removed: that key stays until they go. */
  readonly rows_left: Record<string, number>;
  /** Ordering lanes whose digest was taken again under the newest key. */
  readonly lanes_reindexed: number;
  /** Lanes whose key no listed payload key opens: left under their index key. */
  readonly lanes_unreadable: number;
  /**
   * Lanes left under each older key, by digest or by subjects of webhooks the purge took: the key stays until they go.
   */
  readonly lanes_left: Record<string, number>;
  /** Older keys no row or lane uses any more: retired, so processes need not list them. */
  readonly keys_retired: string[];
}

/**
 * Moves every row with a body to the newest index key, in id order, batch by batch (`progress` after each), then
 * the ordering lanes, then retires the keys no row or lane uses. Resumable: a run that was killed starts again
 * from the rows and lanes still to move.
 */
export async function reindexSubjects(
  knex: Knex,
  atRest: DataAtRest,
  progress: (done: number) => void = () => {},
): Promise<ReindexSummary> {
  const { writeWith } = await indexKeysOf(knex, atRest, { fresh: true });
  let reindexed = 0;
  let unreadable = 0;
  for (let after: string | null = null; ;) {
    const rows = await rowsToReindex(knex, writeWith.id, after, REINDEX_BATCH);
    const rekeyed = rows.flatMap((row) => {
      try {
        const event = openBody(atRest, row.id, row);
        return event ? [{ id: row.id, from: row.subject_key_id, keys: eventSubjectKeys(writeWith.key, event) }] : [];
      } catch (error) {
        if (!(error instanceof StoredTextDecryptionError)) throw error;
        unreadable++;
        return [];
      }
    });
    reindexed += await rekeyRows(knex, rekeyed, writeWith.id);
    progress(reindexed);
    if (rows.length < REINDEX_BATCH) break;
    after = rows[rows.length - 1].id;
  }
  const lanes = await reindexLanes(knex, atRest, writeWith);
  const left = await rowsLeftByKey(knex, writeWith.id);
  const lanesLeft = await lanesLeftByKey(knex, writeWith.id);
  const retired = (await registeredIndexKeys(knex))
    .filter((key) => !key.retired && key.id !== writeWith.id && !left[key.id] && !lanesLeft[key.id])
    .map((key) => key.id);
  await retireIndexKeys(knex, retired);
  return {
    index_key_id: writeWith.id,
    rows_reindexed: reindexed,
    rows_unreadable: unreadable,
    rows_left: left,
    lanes_reindexed: lanes.moved,
    lanes_unreadable: lanes.unreadable,
    lanes_left: lanesLeft,
    keys_retired: retired,
  };
}

/**
 * Ordering lanes after the rows: each lane's digest under the newest key (so a placement finds it there), then its
 * subjects made again from its webhooks, now under the newest key. Batch by batch in lane order.
 */
async function reindexLanes(
  knex: Knex,
  atRest: DataAtRest,
  newest: SubjectIndexKey,
): Promise<{ moved: number; unreadable: number }> {
  let moved = 0;
  let unreadable = 0;
  for (let after = '0'; ;) {
    const lanes = await lanesToReindex(knex, newest.id, after, REINDEX_BATCH);
    const batch = await moveLanes(knex, atRest, lanes, newest);
    moved += batch.moved;
    unreadable += batch.unreadable;
    if (lanes.length < REINDEX_BATCH) break;
    after = lanes[lanes.length - 1].id;
  }
  for (let after = '0'; ;) {
    const lanes = await lanesWithOlderSubjects(knex, newest.id, after, REINDEX_BATCH);
    if (lanes.length) await remakeLaneSubjects(knex, lanes, newest.id);
    if (lanes.length < REINDEX_BATCH) break;
    after = lanes[lanes.length - 1];
  }
  return { moved, unreadable };
}
