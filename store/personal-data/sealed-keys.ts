import type { Knex } from 'knex';
import { raw, runSql, sql } from '../../db/sql';

/**
 * How many bodies, excerpts, ordering lane keys or signing secrets rest one way: in clear (`storedKeyId` null) or under
 * one stored key id.
 */
export interface RestingTexts {
  readonly kind: 'body' | 'excerpt' | 'lane_key' | 'signing_secret';
  /** As the row stores it: `v2:<id>` or a legacy `<id>` (lib/at-rest.ts, storedKeyForm); null: in clear. */
  readonly storedKeyId: string | null;
  readonly count: number;
}

/** Each kind of text that rests in clear or sealed: its table and columns (all fixed names, never input). */
const SEALABLE_TEXT_COLUMNS = [
  {
    kind: 'body',
    table: 'webhook_events',
    keyId: 'body_key_id',
    rests: '(body IS NOT NULL OR body_sealed IS NOT NULL)',
  },
  {
    kind: 'excerpt',
    table: 'webhook_attempts',
    keyId: 'response_body_key_id',
    rests: '(response_body IS NOT NULL OR response_body_sealed IS NOT NULL)',
  },
  {
    kind: 'lane_key',
    table: 'ordering_lanes',
    keyId: 'key_key_id',
    rests: '(key_text IS NOT NULL OR key_sealed IS NOT NULL)',
  },
  {
    kind: 'signing_secret',
    table: 'partner_signing_secrets',
    keyId: 'secret_key_id',
    rests: '(secret_text IS NOT NULL OR secret_sealed IS NOT NULL)',
  },
] as const;

/**
 * Counts the stored texts (SEALABLE_TEXT_COLUMNS) by stored key id, in clear ones included (one scan of each
 * table).
 */
export async function countRestingTexts(knex: Knex): Promise<RestingTexts[]> {
  const counts = await Promise.all(
    SEALABLE_TEXT_COLUMNS.map(async ({ kind, table, keyId, rests }) => {
      const rows = await runSql<{ stored_key_id: string | null; count: number }>(
        knex,
        raw(
          `SELECT ${keyId} AS stored_key_id, count(*)::int AS count FROM ${table} WHERE ${rests} GROUP BY 1 ORDER BY 1`,
        ),
      );
      return rows.map((row) => ({ kind, storedKeyId: row.stored_key_id, count: row.count }));
    }),
  );
  return counts.flat();
}

/**
 * The stored key ids that the texts of SEALABLE_TEXT_COLUMNS rest under, found by skipping from one id to the
 * next through the resting-key indexes (migrations 023 and 024): a few index probes per key id, however many
 * rows rest under each.
 */
export async function restingKeyIds(knex: Knex): Promise<Array<{ kind: RestingTexts['kind']; storedKeyId: string }>> {
  const found = await Promise.all(
    SEALABLE_TEXT_COLUMNS.map(async ({ kind, table, keyId, rests }) => {
      const rows = await runSql<{ key_id: string }>(
        knex,
        raw(`WITH RECURSIVE ids(key_id) AS (
               (SELECT ${keyId} FROM ${table} WHERE ${rests} AND ${keyId} IS NOT NULL ORDER BY 1 LIMIT 1)
               UNION ALL
               SELECT (SELECT ${keyId} FROM ${table} WHERE ${rests} AND ${keyId} > ids.key_id ORDER BY 1 LIMIT 1)
               FROM ids WHERE ids.key_id IS NOT NULL)
             SELECT key_id FROM ids WHERE key_id IS NOT NULL`),
      );
      return rows.map((row) => ({ kind, storedKeyId: row.key_id }));
    }),
  );
  return found.flat();
}

/**
 * Counts the texts resting under these stored key ids, and those in clear when `clear`: through the
 * same indexes, so the rows under other keys (a deployment's millions under its current key) are never read.
 */
export async function countRestingUnder(
  knex: Knex,
  storedKeyIds: readonly string[],
  clear: boolean,
): Promise<RestingTexts[]> {
  const counts = await Promise.all(
    SEALABLE_TEXT_COLUMNS.map(({ kind, table, keyId, rests }) => {
      // Two statements' worth in one, each an index condition: an OR of the two would read the whole index.
      const underKeys = sql`SELECT ${raw(keyId)} AS stored_key_id, count(*)::int AS count
        FROM ${raw(table)}
        WHERE ${raw(rests)} AND ${raw(keyId)} = ANY(${storedKeyIds}::text[])
        GROUP BY 1`;
      const inClear = raw(
        `SELECT NULL, count(*)::int FROM ${table} WHERE ${rests} AND ${keyId} IS NULL HAVING count(*) > 0`,
      );
      // Without parallel workers: the statistics of the whole column (most rows rest nothing, their key id null)
      // make the planner expect many clear rows and start workers, which cost more than the few entries it reads.
      return knex.transaction(async (trx) => {
        await trx.raw('SET LOCAL max_parallel_workers_per_gather = 0');
        const rows = await runSql<{ stored_key_id: string | null; count: number }>(
          trx,
          clear ? sql`${underKeys} UNION ALL ${inClear}` : underKeys,
        );
        return rows.map((row) => ({ kind, storedKeyId: row.stored_key_id, count: row.count }));
      });
    }),
  );
  return counts.flat();
}
