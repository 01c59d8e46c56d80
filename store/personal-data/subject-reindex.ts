import type { Knex } from 'knex';
import { raw, runSql, sql, type SqlFragment } from '../../db/sql';
import { BODY_COLUMNS, type BodyColumns } from '../webhooks/webhook-rows';

// The statements of `partner-service personal-data reindex`: rows whose subject keys were made under another
// index key than the newest (or before key ids), read in id order and written under the newest key, one short
// transaction per batch. Progress is the rows themselves, so a killed run resumes where it stopped.

export interface RowToReindex extends BodyColumns {
  readonly id: string;
  readonly subject_key_id: string | null;
}

/** Up to `limit` rows after `after` with a body and subject keys made under another key than `newestId`. */
export async function rowsToReindex(
  knex: Knex,
  newestId: string,
  after: string | null,
  limit: number,
): Promise<RowToReindex[]> {
  return runSql<RowToReindex>(
    knex,
    sql`SELECT id, subject_key_id, ${BODY_COLUMNS} FROM webhook_events
         WHERE payload_removed_at IS NULL AND subject_keys IS NOT NULL
           AND (subject_key_id IS NULL OR subject_key_id <> ${newestId})
           AND id > COALESCE(${after}::uuid, '00000000-0000-0000-0000-000000000000')
         ORDER BY id LIMIT ${limit}`,
  );
}

/**
 * Writes each row's subject keys (made under index key `keyId`) where `stillAsRead` holds of the row `w` and its
 * entry `r`: the one statement of the index (erasure-steps.ts) and of the reindex. Returns the count written.
 */
export async function setSubjectKeys(
  knex: Knex,
  rows: ReadonlyArray<{ id: string; keys: readonly string[]; from?: string | null }>,
  keyId: string,
  stillAsRead: SqlFragment,
): Promise<number> {
  if (rows.length === 0) return 0;
  const written = await runSql(
    knex,
    sql`UPDATE webhook_events w
           SET subject_keys = ARRAY(SELECT json_array_elements_text(r.value -> 'keys')), subject_key_id = ${keyId}
          FROM json_array_elements(${JSON.stringify(rows)}::json) r
         WHERE w.id = (r.value ->> 'id')::uuid AND ${stillAsRead}
     RETURNING w.id`,
  );
  return written.length;
}

/**
 * Writes each row's keys under `newestId`, unless the row changed meanwhile (an erasure emptied it, another run moved
 * it).
 */
export const rekeyRows = (
  knex: Knex,
  rows: ReadonlyArray<{ id: string; from: string | null; keys: readonly string[] }>,
  newestId: string,
): Promise<number> =>
  setSubjectKeys(
    knex,
    rows,
    newestId,
    raw(
      `w.subject_key_id IS NOT DISTINCT FROM (r.value ->> 'from') AND w.payload_removed_at IS NULL AND ` +
        `w.subject_keys <> '{}'`,
    ),
  );

/**
 * Rows still holding subject keys made under each key id other than `newestId` ('' for rows from before key ids):
 * a key can be retired once none is left. Rows whose body is gone keep their keys: nothing can re-make them.
 */
export async function rowsLeftByKey(knex: Knex, newestId: string): Promise<Record<string, number>> {
  const rows = await runSql<{ key_id: string; n: number }>(
    knex,
    sql`SELECT COALESCE(subject_key_id, '') AS key_id, count(*)::int AS n FROM webhook_events
         WHERE subject_keys <> '{}' AND (subject_key_id IS NULL OR subject_key_id <> ${newestId})
         GROUP BY 1 ORDER BY 1`,
  );
  return Object.fromEntries(rows.map((row) => [row.key_id, row.n]));
}
