import { attribute, columnSql, type AttributeDefinition } from '../engine/attributes';
import { commonAttributes } from '../engine/common-attributes';
import { raw, sql } from '../../../db/sql';
import {
  CREATED,
  FAMILY_NAME,
  FORMATTED_NAME,
  GIVEN_NAME,
  LAST_MODIFIED,
  USER_ID,
  USER_ID_TEXT,
  USER_NAME,
  USER_VERSION,
} from './columns';
import { EMAIL_PRIMARY, EMAIL_VALUE, emailExists, emailsContaining } from './emails';
import { groupReferenceSql, groupValueEquality, USER_GROUP_DISPLAY, USER_GROUP_VALUE, userGroupExists } from './groups';
import { isUserId } from './queries';

/** The SCIM core User schema (RFC 7643 section 4.1) as far as the directory holds it, with each attribute's SQL. */
export const USER_SCHEMA_URN = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const USER_RESOURCE_TYPE = 'User';
export const USERS_ENDPOINT = '/Users';

// No externalId: the directory keeps no provisioning client's identifier for users.
const { id, meta } = commonAttributes({
  name: USER_RESOURCE_TYPE,
  endpoint: USERS_ENDPOINT,
  id: {
    expression: () => USER_ID_TEXT,
    equality: (operator, value) => (isUserId(value) ? sql`${USER_ID} ${raw(operator)} ${value}::bigint` : undefined),
  },
  created: CREATED,
  lastModified: LAST_MODIFIED,
  version: USER_VERSION,
});

export const USER_ATTRIBUTES: readonly AttributeDefinition[] = [
  id,
  attribute('userName', 'string', "Unique identifier for the user: the user's primary e-mail address.", {
    required: true,
    sql: columnSql(USER_NAME),
  }),
  attribute('name', 'complex', "The components of the user's name.", {
    subAttributes: [
      attribute('formatted', 'string', 'The full name: given name, a space, family name.', {
        sql: columnSql(FORMATTED_NAME),
      }),
      attribute('familyName', 'string', 'The family name.', { sql: columnSql(FAMILY_NAME) }),
      attribute('givenName', 'string', 'The given name.', { sql: columnSql(GIVEN_NAME) }),
    ],
  }),
  attribute('emails', 'complex', "The user's e-mail addresses; the primary one is flagged.", {
    multiValued: true,
    exists: emailExists,
    subAttributes: [
      attribute('value', 'string', 'An e-mail address.', {
        sql: { expression: () => EMAIL_VALUE, containing: emailsContaining },
      }),
      attribute('primary', 'boolean', 'Whether this is the primary address (the userName).', {
        sql: columnSql(EMAIL_PRIMARY),
      }),
    ],
  }),
  attribute('groups', 'complex', 'The groups the user is a direct member of.', {
    multiValued: true,
    exists: userGroupExists,
    subAttributes: [
      attribute('value', 'string', 'The id of the group.', {
        caseExact: true,
        sql: { expression: () => USER_GROUP_VALUE, equality: groupValueEquality },
      }),
      attribute('$ref', 'reference', 'The URI of the group.', {
        caseExact: true,
        referenceTypes: ['Group'],
        sql: { expression: groupReferenceSql },
      }),
      attribute('display', 'string', "The group's displayName.", {
        sql: { expression: () => USER_GROUP_DISPLAY, joined: true },
      }),
    ],
  }),
  meta,
];
