import { raw, sql, type SqlFragment } from '../../../db/sql';

/** A group's members in SQL and in responses. Aliases: g group, m member. */

export const MEMBER_VALUE = raw('m.value');
export const MEMBER_TYPE = raw('m.type');
/** A member's display: "first_name last_name" of a user, displayName of a group. Needs MEMBER_JOINS. */
export const MEMBER_DISPLAY = raw("COALESCE(u.first_name || ' ' || u.last_name, mg.display_name)");
export const MEMBER_JOINS = raw(
  'LEFT JOIN users u ON u.id = m.member_user_id LEFT JOIN scim_groups mg ON mg.id = m.member_group_id',
);

/** A filter condition on one member of the group; the user and group joins only when it reads `display`. */
export function memberExists(condition: SqlFragment, joined: boolean): SqlFragment {
  const joins = joined ? sql` ${MEMBER_JOINS}` : raw('');
  return sql`EXISTS (SELECT 1 FROM scim_group_members m${joins} WHERE m.group_id = g.id AND ${condition})`;
}

/** Collection path of a member type: `User` members live under /Users, `Group` members under /Groups. */
const collectionOf = (type: string) => (type === 'User' ? 'Users' : 'Groups');

export const memberReference = (baseUrl: string, type: string, value: string) =>
  `${baseUrl}/${collectionOf(type)}/${value}`;

export const memberReferenceSql = (baseUrl: string): SqlFragment =>
  sql`(${`${baseUrl}/`} || ${raw("CASE WHEN m.type = 'User' THEN 'Users/' ELSE 'Groups/' END")} || m.value)`;
