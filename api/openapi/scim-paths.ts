import type { AttributeDefinition } from '../scim/engine/attributes';
import { DEFAULT_COUNT, MAX_COUNT } from '../scim/engine/list-parameters';
import type { ScimResourceDefinition } from '../scim/engine/resource-definition';
import { groupResource } from '../scim/groups/resource';
import { userResource } from '../scim/users/resource';

// The read-only SCIM 2.0 routes in the same OpenAPI document. Resource schemas come from the attribute
// catalogues that also drive filters and the /Schemas discovery document, so they cannot drift apart.

const SCIM_BASE = '/scim/v2';
const RESOURCES: readonly ScimResourceDefinition[] = [groupResource, userResource];
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
    ...(attribute.subAttributes && {
      properties: Object.fromEntries(attribute.subAttributes.map((sub) => [sub.name, attributeSchema(sub)])),
    }),
  };
  return attribute.multiValued
    ? { type: 'array', items: value, description: attribute.description }
    : { ...value, description: attribute.description };
}

function resourceSchema(resource: ScimResourceDefinition) {
  return {
    type: 'object',
    description:
      `${resource.description} The attributes not asked for with \`attributes\` (or excluded) are absent; id and ` +
      `schemas are always returned.`,
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
  ScimDocument: {
    type: 'object',
    required: ['schemas'],
    properties: { schemas: { type: 'array', items: { type: 'string' } } },
  },
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

const query = (name: string, description: string, schema: object = { type: 'string' }) => ({
  name,
  in: 'query',
  required: false,
  description,
  schema,
});
const projection = [
  query('attributes', 'Comma-separated attributes to return (RFC 7644 section 3.4.2.5).'),
  query('excludedAttributes', 'Comma-separated attributes to leave out.'),
];
const badRequest = {
  '400': {
    description: 'A bad filter, sort attribute or parameter (scimType says which).',
    content: scim(ref('ScimError')),
  },
};
const unauthorized = {
  '401': { description: 'Missing or wrong bearer token (SCIM_BEARER_TOKEN).', content: scim(ref('ScimError')) },
};
const notFound = { '404': { description: 'No such resource.', content: scim(ref('ScimError')) } };

/**
 * The SCIM operations of one deployment: with SCIM_BEARER_TOKEN set each one demands the bearer token and may
 * answer 401; without it they demand nothing, so the document states no security and no 401 there.
 */
function scimOperations(secured: boolean) {
  const operation = (operationId: string, summary: string, schema: object, extra: object = {}, more: object = {}) => ({
    operationId,
    summary,
    tags: ['scim'],
    ...(secured && { security: [{ ScimToken: [] }] }),
    ...extra,
    responses: {
      '200': {
        description: 'The answer, as application/scim+json (application/json when only that is accepted).',
        content: scim(schema),
      },
      ...badRequest,
      ...(secured && unauthorized),
      ...more,
    },
  });
  const discovery = (path: string, summary: string, schema: object, extra = {}, more = {}) => ({
    [`${SCIM_BASE}${path}`]: { get: operation(`scim${path.replace(/[/{}]/g, '')}`, summary, schema, extra, more) },
  });
  return { operation, discovery };
}

// RFC 7644 section 3.4.2.4 gives every integer a meaning, so none is refused: a startIndex below 1 means 1,
// a negative count means 0, and the service provider may cap count (this one at MAX_COUNT).
const START_INDEX =
  '1-based index of the first result. Any integer: a value below 1 means 1 (RFC 7644 section 3.4.2.4).';
const COUNT =
  `Results per page, default ${DEFAULT_COUNT}. Any integer: a negative value means 0 (only totalResults is ` +
  `answered), ` +
  `and a value above ${MAX_COUNT} means ${MAX_COUNT} (RFC 7644 section 3.4.2.4 lets the service provider cap it).`;
const SORT_BY =
  'Attribute to sort by. Empty or absent: no sort, results come in id order (RFC 7644 section 3.4.2.3 makes ' +
  'sorting optional).';

function resourcePaths(resource: ScimResourceDefinition, operation: ReturnType<typeof scimOperations>['operation']) {
  const list = `${SCIM_BASE}${resource.endpoint}`;
  return {
    [list]: {
      get: operation(
        `list${resource.name}s`,
        `List ${resource.name} resources (read-only)`,
        ref(`Scim${resource.name}List`),
        {
          parameters: [
            query(
              'filter',
              'A SCIM filter (RFC 7644 section 3.4.2.2), e.g. `displayName eq "Engineering"`. A malformed one, an ' +
                'empty one included, is 400 invalidFilter.',
            ),
            query('startIndex', START_INDEX, { type: 'integer', default: 1 }),
            query('count', COUNT, { type: 'integer', default: DEFAULT_COUNT }),
            query('sortBy', SORT_BY),
            query('sortOrder', 'ascending (default) or descending.', {
              type: 'string',
              enum: ['ascending', 'descending'],
            }),
            ...projection,
          ],
        },
      ),
    },
    [`${list}/{id}`]: {
      parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
      get: operation(
        `get${resource.name}`,
        `One ${resource.name}`,
        ref(`Scim${resource.name}`),
        { parameters: projection },
        notFound,
      ),
    },
  };
}

/** The SCIM paths; `secured` when SCIM_BEARER_TOKEN is set. */
export function scimPaths(secured: boolean) {
  const { operation, discovery } = scimOperations(secured);
  return {
    ...Object.assign({}, ...RESOURCES.map((resource) => resourcePaths(resource, operation))),
    ...discovery('/ServiceProviderConfig', 'What this service provider supports', ref('ScimDocument')),
    ...discovery('/ResourceTypes', 'The resource types (Group, User)', ref('ScimListResponse')),
    ...discovery(
      '/ResourceTypes/{name}',
      'One resource type',
      ref('ScimDocument'),
      { parameters: [{ name: 'name', in: 'path', required: true, schema: { type: 'string' } }] },
      notFound,
    ),
    ...discovery('/Schemas', 'The resource schemas', ref('ScimListResponse')),
    ...discovery(
      '/Schemas/{uri}',
      'One schema, by its URN',
      ref('ScimDocument'),
      { parameters: [{ name: 'uri', in: 'path', required: true, schema: { type: 'string' } }] },
      notFound,
    ),
  };
}

/** Listed only where SCIM_BEARER_TOKEN is set: a deployment without it demands no credentials on /scim/v2. */
export const scimTokenScheme = {
  type: 'http',
  scheme: 'bearer',
  description: 'SCIM_BEARER_TOKEN: every request under /scim/v2 needs it.',
};
