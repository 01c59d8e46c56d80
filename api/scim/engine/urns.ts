/** URNs of the SCIM protocol messages and discovery schemas (RFC 7644 sections 3.4.2, 3.12 and 4). */
export const LIST_RESPONSE_URN = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const ERROR_URN = 'urn:ietf:params:scim:api:messages:2.0:Error';
export const SERVICE_PROVIDER_CONFIG_URN = 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig';
export const RESOURCE_TYPE_URN = 'urn:ietf:params:scim:schemas:core:2.0:ResourceType';
export const SCHEMA_URN = 'urn:ietf:params:scim:schemas:core:2.0:Schema';
