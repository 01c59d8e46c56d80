import { raw, sql } from '../../../db/sql';
import { utcText } from '../engine/sql-text';
import { tableQueries } from '../engine/table-queries';
import { USER_VERSION } from './columns';

/** The SQL behind the User endpoints. */

export interface UserGroupRow {
  readonly value: string;
  readonly display: string;
}

export interface UserRow {
  readonly id: string;
  readonly first_name: string;
  readonly last_name: string;
  /** Every address, the primary one first. */
  readonly emails: string[];
  readonly created: string;
  readonly last_modified: string;
  /** meta.version, already a weak ETag. */
  readonly version: string;
  /** Only selected when groups are returned; null for a user in no group. */
  readonly groups?: UserGroupRow[] | null;
}

const MAX_BIGINT = 9_223_372_036_854_775_807n;

/** User ids are the directory's positive bigint ids, written canonically; anything else names no user. */
export const isUserId = (value: string): boolean => /^[1-9][0-9]{0,18}$/.test(value) && BigInt(value) <= MAX_BIGINT;

const USER_COLUMNS = sql`u.id::text AS id, u.first_name, u.last_name, u.emails, ${utcText('u.created_at')} AS created,
  ${utcText('u.updated_at')} AS last_modified, ${USER_VERSION} AS version`;

/** The user's groups as a JSON array in group id order; evaluated only for the rows that survive LIMIT. */
const GROUPS_COLUMN = sql`(SELECT json_agg(json_build_object('value', ug.group_id, 'display', gg.display_name)
  ORDER BY ug.group_id)
    FROM scim_group_members ug JOIN scim_groups gg ON gg.id = ug.group_id WHERE ug.member_user_id = u.id) AS groups`;

const columns = (withGroups: boolean) => (withGroups ? sql`${USER_COLUMNS}, ${GROUPS_COLUMN}` : USER_COLUMNS);

/** `Include` is whether to read the groups; the total counter is migration 010's. */
export const userQueries = tableQueries({
  from: raw('users u'),
  columns,
  counter: raw('scim_user_total'),
  idEquals: (id) => sql`u.id = ${id}::bigint`,
});
