import type { Knex } from 'knex';
import { runSql, sql } from '../db/sql';

/** Bodies and response excerpts sealed under a key id outside `listedIds`: they can no longer be opened. */
export interface UnlistedKeyCount {
  readonly bodies: number;
  readonly excerpts: number;
  readonly keyIds: string[];
}

/** Counts what rests under keys no longer listed; bodies through their partial key index. */
export async function countSealedUnderUnlistedKeys(knex: Knex, listedIds: readonly string[]): Promise<UnlistedKeyCount> {
  const [row] = await runSql<{ bodies: number; excerpts: number; key_ids: string[] | null }>(
    knex,
    sql`WITH bodies AS (
          SELECT body_key_id AS key_id FROM webhook_events WHERE body_key_id IS NOT NULL AND body_key_id <> ALL(${listedIds}::text[])
        ), excerpts AS (
          SELECT response_body_key_id AS key_id FROM webhook_attempts WHERE response_body_key_id IS NOT NULL AND response_body_key_id <> ALL(${listedIds}::text[])
        )
        SELECT (SELECT count(*)::int FROM bodies) AS bodies, (SELECT count(*)::int FROM excerpts) AS excerpts,
               (SELECT array_agg(DISTINCT key_id ORDER BY key_id) FROM (SELECT key_id FROM bodies UNION SELECT key_id FROM excerpts) k) AS key_ids`,
  );
  return { bodies: row.bodies, excerpts: row.excerpts, keyIds: row.key_ids ?? [] };
}
