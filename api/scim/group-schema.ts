/**
 * The SCIM Group resource as this service provides it: one catalogue that drives filter resolution,
 * sorting, attribute projection and the /Schemas discovery document.
 */
export const GROUP_SCHEMA_URN = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const LIST_RESPONSE_URN = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const ERROR_URN = 'urn:ietf:params:scim:api:messages:2.0:Error';
export const SERVICE_PROVIDER_CONFIG_URN = 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig';
export const RESOURCE_TYPE_URN = 'urn:ietf:params:scim:schemas:core:2.0:ResourceType';
export const SCHEMA_URN = 'urn:ietf:params:scim:schemas:core:2.0:Schema';

export type ScimType = 'string' | 'dateTime' | 'reference' | 'complex';
export type Returned = 'always' | 'default';

export interface AttributeDefinition {
  readonly name: string;
  readonly type: ScimType;
  readonly description: string;
  readonly multiValued: boolean;
  readonly caseExact: boolean;
  readonly required: boolean;
  readonly returned: Returned;
  readonly referenceTypes?: readonly string[];
  readonly canonicalValues?: readonly string[];
  readonly subAttributes?: readonly AttributeDefinition[];
  /** Common attributes (id, meta) are not part of the Group schema document (RFC 7643 section 3.1). */
  readonly common?: boolean;
}

const simple = (
  name: string,
  type: ScimType,
  description: string,
  options: Partial<AttributeDefinition> = {},
): AttributeDefinition => ({
  name,
  type,
  description,
  multiValued: false,
  caseExact: false,
  required: false,
  returned: 'default',
  ...options,
});

export const GROUP_ATTRIBUTES: readonly AttributeDefinition[] = [
  simple('id', 'string', 'Unique identifier of the group, a UUID assigned by the service provider.', {
    caseExact: true,
    required: true,
    returned: 'always',
    common: true,
  }),
  simple('externalId', 'string', 'Identifier of the group in the provisioning client.', { caseExact: true, common: true }),
  simple('displayName', 'string', 'A human-readable name for the group.', { required: true }),
  simple('members', 'complex', 'The members of the group: users and groups.', {
    multiValued: true,
    subAttributes: [
      simple('value', 'string', 'Identifier of the member: a user id or a group id.'),
      simple('display', 'string', "The member's name: first and last name of a user, or a group's displayName."),
      simple('type', 'string', 'The kind of member.', { canonicalValues: ['User', 'Group'] }),
      simple('$ref', 'reference', 'The URI of the member resource.', { caseExact: true, referenceTypes: ['User', 'Group'] }),
    ],
  }),
  simple('meta', 'complex', 'Resource metadata.', {
    common: true,
    subAttributes: [
      simple('resourceType', 'string', 'The resource type, always Group.', { caseExact: true }),
      simple('created', 'dateTime', 'When the group was added to the directory.'),
      simple('lastModified', 'dateTime', 'When the group was last changed.'),
      simple('location', 'reference', 'The URI of this group.', { caseExact: true, referenceTypes: ['uri'] }),
      simple('version', 'string', 'Weak entity tag of the current version of the group.', { caseExact: true }),
    ],
  }),
];

/** Finds an attribute by name, case-insensitively (RFC 7643 section 2.1). */
export function findAttribute(
  attributes: readonly AttributeDefinition[] | undefined,
  name: string,
): AttributeDefinition | undefined {
  const lower = name.toLowerCase();
  return attributes?.find((a) => a.name.toLowerCase() === lower);
}
