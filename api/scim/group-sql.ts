import { raw, sql, type SqlFragment } from './sql-fragment';

/** SQL pieces shared by the filter compiler and the group queries. Aliases: g group, m member. */

/**
 * Case-insensitive form of a text expression. The builtin pg_c_utf8 collation (PostgreSQL 17+) folds
 * all of Unicode, not just ASCII, and orders by code point; migration 003 indexes the same expressions.
 */
export const folded = (expression: SqlFragment): SqlFragment => sql`lower(${expression} COLLATE "pg_c_utf8")`;

/** A member's display: "first_name last_name" of a user, displayName of a group. Needs MEMBER_JOINS. */
export const MEMBER_DISPLAY = raw("COALESCE(u.first_name || ' ' || u.last_name, mg.display_name)");
export const MEMBER_JOINS = raw('LEFT JOIN users u ON u.id = m.member_user_id LEFT JOIN scim_groups mg ON mg.id = m.member_group_id');

/** meta.version as served: a weak entity tag. */
export const GROUP_VERSION = raw(`('W/"' || g.version || '"')`);

/** RFC 3339 UTC text with microseconds, so a value read back into a filter matches exactly. */
export const utcText = (column: string): SqlFragment =>
  raw(`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`);
