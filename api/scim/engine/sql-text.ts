import { raw, sql, type SqlFragment } from '../../../db/sql';

/**
 * Case-insensitive form of a text expression: lower() under the ICU collation `pis_fold` maps case in every
 * script, on PostgreSQL 14 to 18 alike; the result is re-collated to "C", so comparisons, LIKE and order go by
 * code point. Migration 005 indexes exactly these expressions.
 */
export const folded = (expression: SqlFragment): SqlFragment =>
  sql`(lower(${expression} COLLATE pis_fold) COLLATE "C")`;

/** RFC 3339 UTC text with microseconds, so a value read back into a filter matches exactly. */
export const utcText = (column: string): SqlFragment =>
  raw(`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`);
