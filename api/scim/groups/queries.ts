import { weakEtagSql } from '../engine/etag';
import { resourceLocationSql } from '../engine/locations';
import { raw, sql, type SqlFragment } from '../../../db/sql';
import { utcText } from '../engine/sql-text';
import { tableQueries } from '../engine/table-queries';
import { MEMBER_DISPLAY, MEMBER_JOINS, memberReferenceSql } from './members';
import { GROUP_RESOURCE_TYPE, GROUP_SCHEMA_URN, GROUPS_ENDPOINT } from './schema';

/** The SQL behind the Group endpoints. */

export interface MemberRow {
  readonly value: string;
  readonly type: 'User' | 'Group';
  readonly display: string | null;
}

export interface GroupRow {
  readonly id: string;
  readonly external_id: string | null;
  readonly display_name: string;
  readonly created: string;
  readonly last_modified: string;
  readonly version: number;
  /** Only selected when members are returned; null for a group without members. */
  readonly members?: MemberRow[] | null;
}

const GROUP_COLUMNS = sql`g.id, g.external_id, g.display_name, ${utcText('g.created')} AS created,
  ${utcText('g.last_modified')} AS last_modified, g.version`;

/**
 * A group's members as a JSON array, users first (by id), then groups. A correlated subquery, so page
 * and members come in one statement; PostgreSQL evaluates it only for the rows that survive LIMIT.
 */
const MEMBERS_COLUMN = sql`(SELECT json_agg(json_build_object('value', m.value, 'type', m.type, 'display',
  ${MEMBER_DISPLAY})
      ORDER BY m.member_user_id NULLS LAST, m.member_group_id)
    FROM scim_group_members m ${MEMBER_JOINS} WHERE m.group_id = g.id) AS members`;

/**
 * serializeGroup() in SQL, key for key: NULL where it omits a value (json_strip_nulls drops them), so a list
 * page comes out of PostgreSQL as the response's own bytes. test/scim compares both paths.
 */
function renderedGroup(withMembers: boolean, baseUrl: string): SqlFragment {
  const members = withMembers
    ? sql`(SELECT json_agg(json_build_object('value', m.value, 'display', NULLIF(${MEMBER_DISPLAY}, ''), 'type', m.type,
      '$ref', ${memberReferenceSql(baseUrl)})
        ORDER BY m.member_user_id NULLS LAST, m.member_group_id)
      FROM scim_group_members m ${MEMBER_JOINS} WHERE m.group_id = g.id)`
    : raw('NULL');
  return sql`json_build_object(
    'schemas', json_build_array(${GROUP_SCHEMA_URN}::text), 'id', g.id, 'externalId', NULLIF(g.external_id, ''),
    'displayName', g.display_name, 'members', ${members},
    'meta', json_build_object('resourceType', ${GROUP_RESOURCE_TYPE}::text, 'created', ${utcText('g.created')},
      'lastModified', ${utcText('g.last_modified')}, 'location',
        ${resourceLocationSql(baseUrl, GROUPS_ENDPOINT, raw('g.id::text'))},
      'version', ${weakEtagSql('g.version')}))`;
}

const columns = (withMembers: boolean) => (withMembers ? sql`${GROUP_COLUMNS}, ${MEMBERS_COLUMN}` : GROUP_COLUMNS);

/**
 * `Include` is whether to read the members; Entra's excludedAttributes=members makes it false. The total
 * counter is migration 003's. `id` must already be a canonical UUID (isGroupId).
 */
export const groupQueries = tableQueries({
  from: raw('scim_groups g'),
  columns,
  counter: raw('scim_group_total'),
  idEquals: (id) => sql`g.id = ${id}::uuid`,
  rendered: renderedGroup,
});
