import type { AttributeDefinition } from '../scim/engine/attributes';
import { DEFAULT_COUNT, MAX_COUNT } from '../scim/engine/list-parameters';
import type { ScimResourceDefinition } from '../scim/engine/resource-definition';
import { groupResource } from '../scim/groups/resource';
import { userResource } from '../scim/users/resource';

// The read-only SCIM 2.0 routes in the same OpenAPI document. Resource schemas come from the attribute
// catalogues that also drive filters and the /Schemas discovery document, so they cannot drift apart.

const SCIM_BASE = '/scim/v2';
const RESOURCES: readonly ScimResourceDefinition<any, any>[] = [groupResource, userResource];
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const scim = (schema: object) => ({ 'application/scim+json': { schema } });

const SCIM_TYPES: Record<AttributeDefinition['type'], object> = {
  string: { type: 'string' },
  boolean: { type: 'boolean' },
  dateTime: { type: 'string', format: 'date-time' },
  reference: { type: 'string', format: 'uri-reference' },
  complex: { type: 'object' },
};

/** One attribute as JSON Schema; not `required`, since `attributes`/`excludedAttributes` may leave it out. */
function attributeSchema(attribute: AttributeDefinition): object {
  const value = {
    ...SCIM_TYPES[attribute.type],
    ...(attribute.subAttributes && { properties: Object.fromEntries(attribute.subAttributes.map((sub) => [sub.name, attributeSchema(sub)])) }),
  };
  return attribute.multiValued ? { type: 'array', items: value, description: attribute.description } : { ...value, description: attribute.description };
}

function resourceSchema(resource: ScimResourceDefinition<any, any>) {
  return {
    type: 'object',
    description: `${resource.description} The attributes not asked for with \`attributes\` (or excluded) are absent; id and schemas are always returned.`,
    required: ['schemas', 'id'],
    properties: {
      schemas: { type: 'array', items: { type: 'string' }, contains: { const: resource.schema } },
      ...Object.fromEntries(resource.attributes.map((a) => [a.name, attributeSchema(a)])),
    },
  };
}

export const scimSchemas = {
  ...Object.fromEntries(RESOURCES.map((r) => [`Scim${r.name}`, resourceSchema(r)])),
  ...Object.fromEntries(RESOURCES.map((r) => [`Scim${r.name}List`, listResponse(ref(`Scim${r.name}`))])),
  ScimListResponse: listResponse({ type: 'object' }),
  ScimError: {
    type: 'object',
    description: 'Every SCIM error (RFC 7644 section 3.12).',
    required: ['schemas', 'status', 'detail'],
    properties: {
      schemas: { type: 'array', items: { const: 'urn:ietf:params:scim:api:messages:2.0:Error' } },
      status: { type: 'string', pattern: '^[1-5][0-9][0-9]$' },
      scimType: { type: 'string' },
      detail: { type: 'string' },
    },
  },
  ScimDocument: { type: 'object', required: ['schemas'], properties: { schemas: { type: 'array', items: { type: 'string' } } } },
};

function listResponse(item: object) {
  return {
    type: 'object',
    required: ['schemas', 'totalResults', 'startIndex', 'itemsPerPage', 'Resources'],
    properties: {
      schemas: { type: 'array', items: { const: 'urn:ietf:params:scim:api:messages:2.0:ListResponse' } },
      totalResults: { type: 'integer', minimum: 0 },
      startIndex: { type: 'integer', minimum: 1 },
      itemsPerPage: { type: 'integer', minimum: 0 },
      Resources: { type: 'array', items: item },
    },
  };
}

const query = (name: string, description: string, schema: object = { type: 'string' }) => ({ name, in: 'query', required: false, description, schema });
const projection = [
  query('attributes', 'Comma-separated attributes to return (RFC 7644 section 3.4.2.5).'),
  query('excludedAttributes', 'Comma-separated attributes to leave out.'),
];
const errors = {
  '400': { description: 'A bad filter, sort attribute or parameter (scimType says which).', content: scim(ref('ScimError')) },
  '401': { description: 'Missing or wrong bearer token (SCIM_BEARER_TOKEN).', content: scim(ref('ScimError')) },
};
const notFound = { '404': { description: 'No such resource.', content: scim(ref('ScimError')) } };

const operation = (operationId: string, summary: string, schema: object, extra: object = {}, more: object = {}) => ({
  operationId,
  summary,
  tags: ['scim'],
  security: [{ ScimToken: [] }],
  ...extra,
  responses: { '200': { description: 'The answer, as application/scim+json (application/json when only that is accepted).', content: scim(schema) }, ...errors, ...more },
});

function resourcePaths(resource: ScimResourceDefinition<any, any>) {
  const list = `${SCIM_BASE}${resource.endpoint}`;
  return {
    [list]: {
      get: operation(`list${resource.name}s`, `List ${resource.name} resources (read-only)`, ref(`Scim${resource.name}List`), {
        parameters: [
          query('filter', 'A SCIM filter (RFC 7644 section 3.4.2.2), e.g. `displayName eq "Engineering"`.'),
          query('startIndex', '1-based index of the first result.', { type: 'integer', minimum: 1, default: 1 }),
          query('count', `Results per page, at most ${MAX_COUNT}.`, { type: 'integer', minimum: 0, maximum: MAX_COUNT, default: DEFAULT_COUNT }),
          query('sortBy', 'Attribute to sort by.'),
          query('sortOrder', 'ascending (default) or descending.', { type: 'string', enum: ['ascending', 'descending'] }),
          ...projection,
        ],
      }),
    },
    [`${list}/{id}`]: {
      parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
      get: operation(`get${resource.name}`, `One ${resource.name}`, ref(`Scim${resource.name}`), { parameters: projection }, notFound),
    },
  };
}

const discovery = (path: string, summary: string, schema: object, extra = {}, more = {}) => ({
  [`${SCIM_BASE}${path}`]: { get: operation(`scim${path.replace(/[/{}]/g, '')}`, summary, schema, extra, more) },
});

export const scimPaths = {
  ...Object.assign({}, ...RESOURCES.map(resourcePaths)),
  ...discovery('/ServiceProviderConfig', 'What this service provider supports', ref('ScimDocument')),
  ...discovery('/ResourceTypes', 'The resource types (Group, User)', ref('ScimListResponse')),
  ...discovery('/ResourceTypes/{name}', 'One resource type', ref('ScimDocument'), { parameters: [{ name: 'name', in: 'path', required: true, schema: { type: 'string' } }] }, notFound),
  ...discovery('/Schemas', 'The resource schemas', ref('ScimListResponse')),
  ...discovery('/Schemas/{uri}', 'One schema, by its URN', ref('ScimDocument'), { parameters: [{ name: 'uri', in: 'path', required: true, schema: { type: 'string' } }] }, notFound),
};

export const scimTokenScheme = { type: 'http', scheme: 'bearer', description: 'SCIM_BEARER_TOKEN; without it configured, /scim/v2 answers without credentials.' };
