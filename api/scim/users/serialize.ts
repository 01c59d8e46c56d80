import { resourceLocation } from '../engine/locations';
import { groupReference } from './groups';
import type { UserRow } from './queries';
import { USER_RESOURCE_TYPE, USER_SCHEMA_URN, USERS_ENDPOINT } from './schema';

/** A users row as a SCIM User resource, before projection. Absent values are omitted. */
export function serializeUser(user: UserRow, baseUrl: string): Record<string, unknown> {
  const { groups } = user;
  return {
    schemas: [USER_SCHEMA_URN],
    id: user.id,
    userName: user.emails[0],
    name: { formatted: `${user.first_name} ${user.last_name}`, familyName: user.last_name, givenName: user.first_name },
    emails: user.emails.map((value, i) => ({ value, primary: i === 0 })),
    ...(groups?.length
      ? { groups: groups.map((g) => ({ value: g.value, $ref: groupReference(baseUrl, g.value), display: g.display })) }
      : {}),
    meta: {
      resourceType: USER_RESOURCE_TYPE,
      created: user.created,
      lastModified: user.last_modified,
      location: resourceLocation(baseUrl, USERS_ENDPOINT, user.id),
      version: user.version,
    },
  };
}

export const userVersion = (user: Pick<UserRow, 'version'>) => user.version;
