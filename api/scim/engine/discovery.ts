import type { AttributeDefinition } from './attributes';
import { MAX_COUNT } from './list-parameters';
import type { ScimResourceDefinition } from './resource-definition';
import { RESOURCE_TYPE_URN, SCHEMA_URN, SERVICE_PROVIDER_CONFIG_URN } from './urns';

/** The discovery documents of RFC 7644 section 4, describing exactly what this provider supports. */

export function serviceProviderConfig(baseUrl: string, tokenRequired: boolean) {
  return {
    schemas: [SERVICE_PROVIDER_CONFIG_URN],
    patch: { supported: false },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: MAX_COUNT },
    changePassword: { supported: false },
    sort: { supported: true },
    // GET {endpoint}/{id} sends an ETag (meta.version) and answers If-None-Match with 304.
    etag: { supported: true },
    authenticationSchemes: tokenRequired
      ? [
          {
            type: 'oauthbearertoken',
            name: 'Bearer token',
            description: 'A static bearer token configured on the service (SCIM_BEARER_TOKEN).',
            specUri: 'https://www.rfc-editor.org/info/rfc6750',
            primary: true,
          },
        ]
      : [],
    meta: { resourceType: 'ServiceProviderConfig', location: `${baseUrl}/ServiceProviderConfig` },
  };
}

export function resourceTypeDocument(resource: ScimResourceDefinition, baseUrl: string) {
  return {
    schemas: [RESOURCE_TYPE_URN],
    id: resource.name,
    name: resource.name,
    endpoint: resource.endpoint,
    description: resource.description,
    schema: resource.schema,
    schemaExtensions: [],
    meta: { resourceType: 'ResourceType', location: `${baseUrl}/ResourceTypes/${resource.name}` },
  };
}

export function schemaDocument(resource: ScimResourceDefinition, baseUrl: string) {
  return {
    schemas: [SCHEMA_URN],
    id: resource.schema,
    name: resource.name,
    description: resource.schemaDescription,
    attributes: resource.attributes.filter((a) => !a.common).map(describeAttribute),
    meta: { resourceType: 'Schema', location: `${baseUrl}/Schemas/${resource.schema}` },
  };
}

/** RFC 7643 section 7 attribute definition. Every attribute is readOnly: there is no write endpoint. */
function describeAttribute(attribute: AttributeDefinition): Record<string, unknown> {
  return {
    name: attribute.name,
    type: attribute.type,
    multiValued: attribute.multiValued,
    description: attribute.description,
    required: attribute.required,
    caseExact: attribute.caseExact,
    mutability: 'readOnly',
    returned: attribute.returned,
    uniqueness: 'none',
    ...(attribute.canonicalValues ? { canonicalValues: attribute.canonicalValues } : {}),
    ...(attribute.referenceTypes ? { referenceTypes: attribute.referenceTypes } : {}),
    ...(attribute.subAttributes ? { subAttributes: attribute.subAttributes.map(describeAttribute) } : {}),
  };
}
