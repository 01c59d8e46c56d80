import { isReturned } from '../engine/projection';
import { defineScimResource } from '../engine/resource-definition';
import { folded } from '../engine/sql-text';
import { CREATED, FAMILY_NAME, GIVEN_NAME, LAST_MODIFIED, USER_ID, USER_NAME } from './columns';
import { isUserId, userQueries, type UserRow } from './queries';
import { USER_ATTRIBUTES, USER_RESOURCE_TYPE, USER_SCHEMA_URN, USERS_ENDPOINT } from './schema';
import { serializeUser, userVersion } from './serialize';

/** SCIM Users (`/Users`): the directory's users, their addresses and their groups, read-only. */
export const userResource = defineScimResource<UserRow, boolean>({
  name: USER_RESOURCE_TYPE,
  endpoint: USERS_ENDPOINT,
  schema: USER_SCHEMA_URN,
  description: 'User (read-only)',
  schemaDescription: 'User (read-only: this service provider offers no write operations)',
  attributes: USER_ATTRIBUTES,
  sortBy: {
    id: USER_ID,
    userName: folded(USER_NAME),
    'name.familyName': folded(FAMILY_NAME),
    'name.givenName': folded(GIVEN_NAME),
    'meta.created': CREATED,
    'meta.lastModified': LAST_MODIFIED,
  },
  isId: isUserId,
  // Groups are the costly part of a user: read only when returned.
  include: (projection) => isReturned(projection, 'groups'),
  queries: userQueries,
  serialize: serializeUser,
  version: userVersion,
});
