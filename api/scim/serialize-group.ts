import type { GroupRow } from './group-queries';
import { GROUP_SCHEMA_URN, LIST_RESPONSE_URN } from './group-schema';
import { groupLocation, memberReference } from './locations';
import { project, type Projection } from './projection';

/** A group row as a SCIM Group resource, before projection. Absent values are omitted. */
export function groupResource(group: GroupRow, baseUrl: string): Record<string, unknown> {
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
      resourceType: 'Group',
      created: group.created,
      lastModified: group.last_modified,
      location: groupLocation(baseUrl, group.id),
      version: groupVersion(group),
    },
  };
}

export const groupVersion = (group: Pick<GroupRow, 'version'>) => `W/"${group.version}"`;

export function projectedGroup(group: GroupRow, baseUrl: string, projection: Projection) {
  return project(groupResource(group, baseUrl), projection);
}

/** RFC 7644 section 3.4.2 list envelope; counts are JSON integers. */
export function listResponse(resources: readonly unknown[], totalResults: number, startIndex: number) {
  return {
    schemas: [LIST_RESPONSE_URN],
    totalResults,
    startIndex,
    itemsPerPage: resources.length,
    Resources: resources,
  };
}
