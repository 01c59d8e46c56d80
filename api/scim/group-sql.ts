import { raw, sql, type SqlFragment } from './sql-fragment';

/** SQL pieces shared by the filter compiler and the group queries. Aliases: g group, m member. */

/**
 * Case-insensitive form of a text expression: lower() under the ICU collation `pis_fold` maps case in every
 * script, on PostgreSQL 14 to 18 alike; the result is re-collated to "C", so comparisons, LIKE and order go by
 * code point. Migration 005 indexes exactly these expressions.
 */
export const folded = (expression: SqlFragment): SqlFragment => sql`(lower(${expression} COLLATE pis_fold) COLLATE "C")`;

/** A member's display: "first_name last_name" of a user, displayName of a group. Needs MEMBER_JOINS. */
export const MEMBER_DISPLAY = raw("COALESCE(u.first_name || ' ' || u.last_name, mg.display_name)");
export const MEMBER_JOINS = raw('LEFT JOIN users u ON u.id = m.member_user_id LEFT JOIN scim_groups mg ON mg.id = m.member_group_id');

/** meta.version as served: a weak entity tag. */
export const GROUP_VERSION = raw(`('W/"' || g.version || '"')`);

/** RFC 3339 UTC text with microseconds, so a value read back into a filter matches exactly. */
export const utcText = (column: string): SqlFragment =>
  raw(`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`);
