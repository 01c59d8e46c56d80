import { isReturned } from '../engine/projection';
import { defineScimResource } from '../engine/resource-definition';
import { folded } from '../engine/sql-text';
import { sql } from '../../../db/sql';
import { CREATED, DISPLAY_NAME, EXTERNAL_ID, GROUP_ID, LAST_MODIFIED } from './columns';
import { isGroupId } from './columns';
import { groupQueries, type GroupRow } from './queries';
import { GROUP_ATTRIBUTES, GROUP_RESOURCE_TYPE, GROUP_SCHEMA_URN, GROUPS_ENDPOINT } from './schema';
import { groupVersion, serializeGroup } from './serialize';

/** SCIM Groups (`/Groups`): the directory's groups and their members, read-only. */
export const groupResource = defineScimResource<GroupRow, boolean>({
  name: GROUP_RESOURCE_TYPE,
  endpoint: GROUPS_ENDPOINT,
  schema: GROUP_SCHEMA_URN,
  description: 'Group (read-only)',
  schemaDescription: 'Group (read-only: this service provider offers no write operations)',
  attributes: GROUP_ATTRIBUTES,
  sortBy: {
    id: GROUP_ID,
    displayName: folded(DISPLAY_NAME),
    externalId: sql`${EXTERNAL_ID} COLLATE "C"`,
    'meta.created': CREATED,
    'meta.lastModified': LAST_MODIFIED,
  },
  isId: isGroupId,
  // Members are the costly part of a group: read only when returned.
  include: (projection) => isReturned(projection, 'members'),
  queries: groupQueries,
  serialize: serializeGroup,
  version: groupVersion,
  // A page whose projection at most drops members comes out of PostgreSQL as JSON text.
  renderedOmits: new Set(['members']),
});
