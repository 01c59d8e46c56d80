import type { Knex } from 'knex';
import type { Config } from '../../lib/config';
import { dataAtRest, type DataAtRest } from '../../lib/at-rest';
import { eventSubjectKeys } from '../../lib/subject-index';
import { indexKeysOf, registerDevelopmentIndexKey, registeredIndexKeys, retireIndexKeys } from '../../store/personal-data/subject-index-keys';
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
  /** Older keys no row uses any more: retired, so processes need not list them. */
  readonly keys_retired: string[];
}

/**
 * Moves every row with a body to the newest index key, in id order, batch by batch (`progress` after each), then
 * retires the keys no row uses. Resumable: a run that was killed starts again from the rows still to move.
 */
export async function reindexSubjects(knex: Knex, atRest: DataAtRest, progress: (done: number) => void = () => {}): Promise<ReindexSummary> {
  const { writeWith } = await indexKeysOf(knex, atRest, { fresh: true });
  let reindexed = 0;
  let unreadable = 0;
  for (let after: string | null = null; ; ) {
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
  const left = await rowsLeftByKey(knex, writeWith.id);
  const retired = (await registeredIndexKeys(knex)).filter((key) => !key.retired && key.id !== writeWith.id && !left[key.id]).map((key) => key.id);
  await retireIndexKeys(knex, retired);
  return { index_key_id: writeWith.id, rows_reindexed: reindexed, rows_unreadable: unreadable, rows_left: left, keys_retired: retired };
}
