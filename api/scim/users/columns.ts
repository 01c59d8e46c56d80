import { raw, sql } from '../../../db/sql';

/**
 * The users row's columns as filters and sorting read them; `u` is the users row. The directory keeps no
 * username, so userName is the primary e-mail address (`email_primary`, always `emails[1]`).
 */

export const USER_ID = raw('u.id');
export const USER_ID_TEXT = raw('u.id::text');
export const USER_NAME = raw('u.email_primary');
export const GIVEN_NAME = raw('u.first_name');
export const FAMILY_NAME = raw('u.last_name');
/** The same "first last" a group member's display shows. */
export const FORMATTED_NAME = raw("(u.first_name || ' ' || u.last_name)");
export const CREATED = raw('u.created_at');
export const LAST_MODIFIED = raw('u.updated_at');

/**
 * meta.version. Users have no version counter, and a user's groups (their ids and display names) change
 * without touching `updated_at`; so the tag hashes `updated_at` with the (id, version) of each group the
 * user is in. Epoch seconds, not timestamptz text, so the session time zone cannot change it.
 */
export const USER_VERSION = sql`('W/"' || left(md5(extract(epoch FROM u.updated_at)::text || COALESCE(
    (SELECT string_agg(vg.id::text || ':' || vg.version, ',' ORDER BY vg.id)
       FROM scim_group_members vm JOIN scim_groups vg ON vg.id = vm.group_id
      WHERE vm.member_user_id = u.id), '')), 16) || '"')`;
