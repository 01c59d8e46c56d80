import { isCanonicalUuid } from '../../../lib/validation';
import { resourceLocation, resourceLocationSql } from '../engine/locations';
import { raw, sql, type SqlFragment } from '../../../db/sql';
import { GROUPS_ENDPOINT } from '../groups/schema';

/**
 * The groups a user is a direct member of, from scim_group_members (alias `ug`, the group `gg`). Nested
 * memberships are not expanded: the Group resource lists its member groups itself.
 */

export const USER_GROUP_VALUE = raw('ug.group_id::text');
export const USER_GROUP_DISPLAY = raw('gg.display_name');
export const USER_GROUP_JOIN = raw('JOIN scim_groups gg ON gg.id = ug.group_id');

/** Group ids compare exactly, as Group `id` does; a non-UUID names no group. Served by (group_id, member_user_id). */
export const groupValueEquality = (operator: '=' | '<>', value: string): SqlFragment | undefined =>
  isCanonicalUuid(value) ? sql`ug.group_id ${raw(operator)} ${value}::uuid` : undefined;

export function userGroupExists(condition: SqlFragment, joined: boolean): SqlFragment {
  const join = joined ? sql` ${USER_GROUP_JOIN}` : raw('');
  return sql`EXISTS (SELECT 1 FROM scim_group_members ug${join} WHERE ug.member_user_id = u.id AND ${condition})`;
}

export const groupReference = (baseUrl: string, groupId: string) => resourceLocation(baseUrl, GROUPS_ENDPOINT, groupId);

export const groupReferenceSql = (baseUrl: string): SqlFragment =>
  resourceLocationSql(baseUrl, GROUPS_ENDPOINT, USER_GROUP_VALUE);
