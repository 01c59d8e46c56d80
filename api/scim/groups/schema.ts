import { attribute, columnSql, type AttributeDefinition } from '../engine/attributes';
import { commonAttributes } from '../engine/common-attributes';
import { raw, sql } from '../../../db/sql';
import {
  CREATED,
  DISPLAY_NAME,
  EXTERNAL_ID,
  GROUP_ID,
  GROUP_ID_TEXT,
  GROUP_VERSION,
  isGroupId,
  LAST_MODIFIED,
} from './columns';
import { MEMBER_DISPLAY, MEMBER_TYPE, MEMBER_VALUE, memberExists, memberReferenceSql } from './members';

/** The SCIM Group schema as this service provides it, each attribute with the SQL that filters read. */
export const GROUP_SCHEMA_URN = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const GROUP_RESOURCE_TYPE = 'Group';
export const GROUPS_ENDPOINT = '/Groups';

const { id, externalId, meta } = commonAttributes({
  name: GROUP_RESOURCE_TYPE,
  endpoint: GROUPS_ENDPOINT,
  id: {
    expression: () => GROUP_ID_TEXT,
    equality: (operator, value) => (isGroupId(value) ? sql`${GROUP_ID} ${raw(operator)} ${value}::uuid` : undefined),
  },
  externalId: EXTERNAL_ID,
  created: CREATED,
  lastModified: LAST_MODIFIED,
  version: GROUP_VERSION,
});

export const GROUP_ATTRIBUTES: readonly AttributeDefinition[] = [
  id,
  externalId,
  attribute('displayName', 'string', 'A human-readable name for the group.', {
    required: true,
    sql: columnSql(DISPLAY_NAME),
  }),
  attribute('members', 'complex', 'The members of the group: users and groups.', {
    multiValued: true,
    exists: memberExists,
    subAttributes: [
      attribute('value', 'string', 'Identifier of the member: a user id or a group id.', {
        sql: columnSql(MEMBER_VALUE),
      }),
      attribute('display', 'string', "The member's name: first and last name of a user, or a group's displayName.", {
        sql: { expression: () => MEMBER_DISPLAY, joined: true },
      }),
      attribute('type', 'string', 'The kind of member.', {
        canonicalValues: ['User', 'Group'],
        sql: columnSql(MEMBER_TYPE),
      }),
      attribute('$ref', 'reference', 'The URI of the member resource.', {
        caseExact: true,
        referenceTypes: ['User', 'Group'],
        sql: { expression: memberReferenceSql },
      }),
    ],
  }),
  meta,
];
