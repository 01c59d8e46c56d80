import type { Knex } from 'knex';
import { runSql, sql } from '../../db/sql';

/** How many bodies or excerpts rest one way: in clear (`storedKeyId` null) or under one stored key id. */
export interface RestingTexts {
  readonly kind: 'body' | 'excerpt';
  /** As the row stores it: `v2:<id>` or a legacy `<id>` (lib/at-rest.ts, storedKeyForm); null: in clear. */
  readonly storedKeyId: string | null;
  readonly count: number;
}

/** Counts the stored bodies and excerpts by stored key id, in clear ones included (one scan of each table). */
export async function countRestingTexts(knex: Knex): Promise<RestingTexts[]> {
  const rows = await runSql<{ kind: 'body' | 'excerpt'; stored_key_id: string | null; count: number }>(
    knex,
    sql`SELECT 'body' AS kind, body_key_id AS stored_key_id, count(*)::int AS count
          FROM webhook_events WHERE body IS NOT NULL OR body_sealed IS NOT NULL GROUP BY body_key_id
        UNION ALL
        SELECT 'excerpt', response_body_key_id, count(*)::int
          FROM webhook_attempts WHERE response_body IS NOT NULL OR response_body_sealed IS NOT NULL GROUP BY response_body_key_id
        ORDER BY 1, 2`,
  );
  return rows.map((row) => ({ kind: row.kind, storedKeyId: row.stored_key_id, count: row.count }));
}
