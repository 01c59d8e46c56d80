import { weakEtag } from '../engine/etag';
import { resourceLocation } from '../engine/locations';
import { memberReference } from './members';
import type { GroupRow } from './queries';
import { GROUP_RESOURCE_TYPE, GROUP_SCHEMA_URN, GROUPS_ENDPOINT } from './schema';

/** A group row as a SCIM Group resource, before projection. Absent values are omitted. */
export function serializeGroup(group: GroupRow, baseUrl: string): Record<string, unknown> {
  const { members } = group;
  return {
    schemas: [GROUP_SCHEMA_URN],
    id: group.id,
    ...(group.external_id ? { externalId: group.external_id } : {}),
    displayName: group.display_name,
    ...(members?.length
      ? {
          members: members.map((m) => ({
            value: m.value,
            ...(m.display ? { display: m.display } : {}),
            type: m.type,
            $ref: memberReference(baseUrl, m.type, m.value),
          })),
        }
      : {}),
    meta: {
      resourceType: GROUP_RESOURCE_TYPE,
      created: group.created,
      lastModified: group.last_modified,
      location: resourceLocation(baseUrl, GROUPS_ENDPOINT, group.id),
      version: groupVersion(group),
    },
  };
}

export const groupVersion = (group: Pick<GroupRow, 'version'>) => weakEtag(group.version);
