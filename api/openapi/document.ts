import type { Config } from '../../lib/config';
import { DETAIL } from '../listings/errors';
import { ALLOWED_METHODS } from '../listings/methods';
import {
  CURSOR_PARAM,
  DEFAULT_PAGE_SIZE,
  LAST_PAGE,
  MAX_PAGE_SIZE,
  PAGE_PARAM,
  PAGE_SIZE_PARAM,
} from '../listings/paging/page-params';
import { schemas } from './schemas';
import { withAuditActions } from './audit-actions';
import { internalPaths, internalSchemas } from './internal';
import { partnerApiPaths, partnerApiSchemas } from './partner';
import { scimPaths, scimSchemas, scimTokenScheme } from './scim-paths';
import { partnerTokenScheme, webhookCatalog, webhookSchemas } from './webhook-catalog';
import { SIGNATURE_GUIDE } from './signature-guide';

const json = (schema: object, examples?: Record<string, { value: unknown }>) => ({
  'application/json': { schema, ...(examples && { examples }) },
});
const schemaRef = (name: keyof typeof schemas) => ({ $ref: `#/components/schemas/${name}` });
const errorExamples = (...details: string[]) =>
  Object.fromEntries(details.map((detail, i) => [`detail${i + 1}`, { value: { detail } }]));

const parameters = (versions: readonly string[]) => ({
  ApiVersion: {
    name: 'api_version',
    in: 'path',
    required: true,
    description: 'API version. Any other value answers 404.',
    schema: { type: 'string', enum: [...versions] },
  },
  CompanyPk: {
    name: 'company_pk',
    in: 'path',
    required: true,
    description: 'Company ID, as in webhooks (company_id).',
    schema: { type: 'string' },
  },
  JobPk: {
    name: 'job_pk',
    in: 'path',
    required: true,
    description: 'Job ID, as in webhooks (job.id).',
    schema: { type: 'string' },
  },
  Page: {
    name: PAGE_PARAM,
    in: 'query',
    required: false,
    description:
      `1-based page number, or "${LAST_PAGE}". A page that is not a positive integer or lies past the end ` +
      `answers 404.`,
    schema: {
      oneOf: [
        { type: 'integer', minimum: 1, default: 1 },
        { type: 'string', const: LAST_PAGE },
      ],
    },
  },
  PageSize: {
    name: PAGE_SIZE_PARAM,
    in: 'query',
    required: false,
    description: `Users per page, at most ${MAX_PAGE_SIZE}. A value that is not a positive integer means the default.`,
    schema: { type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE },
  },
  Cursor: {
    name: CURSOR_PARAM,
    in: 'query',
    required: false,
    description:
      'Opaque position carried by `next` and `previous` links, so that following them costs the same at any depth. ' +
      'Do not build or edit it: an altered cursor answers 404 "Invalid cursor".',
    schema: { type: 'string' },
  },
});

const responses = {
  MethodNotAllowed: {
    description: `Any method other than ${ALLOWED_METHODS.join(', ')}.`,
    headers: { Allow: { schema: { type: 'string', const: ALLOWED_METHODS.join(', ') } } },
    content: json(schemaRef('Error'), errorExamples(DETAIL.methodNotAllowed('POST'))),
  },
  PermissionDenied: {
    description:
      'Missing or wrong app credentials, or a company or job the app was not granted (or that does not exist).',
    content: json(
      schemaRef('Error'),
      errorExamples(DETAIL.notAuthenticated, DETAIL.authenticationFailed, DETAIL.permissionDenied),
    ),
  },
  NotFound: {
    description: 'Unknown API version, a page that does not exist, or an altered cursor.',
    content: json(schemaRef('Error'), errorExamples('Not found.', DETAIL.invalidPage, DETAIL.invalidCursor)),
  },
  BadRequest: {
    description: 'The Host (or trusted X-Forwarded-Host) header is not a valid host name.',
    content: json(schemaRef('Error'), errorExamples(DETAIL.invalidHost)),
  },
  ServerError: {
    description: 'Unexpected failure.',
    content: json(schemaRef('Error'), errorExamples('A server error occurred.')),
  },
  Options: {
    description: 'What the endpoint is and which methods it allows.',
    headers: { Allow: { schema: { type: 'string', const: ALLOWED_METHODS.join(', ') } } },
    content: json(schemaRef('ViewMetadata')),
  },
};

const componentRef = (kind: 'parameters' | 'responses', name: string) => ({ $ref: `#/components/${kind}/${name}` });

function listingPath(summary: string, pkParameter: string, listSchema: keyof typeof schemas, operationId: string) {
  return {
    parameters: ['ApiVersion', pkParameter].map((name) => componentRef('parameters', name)),
    get: {
      operationId,
      summary,
      description: 'HEAD answers the same without a body. Users are ordered by id, ascending.',
      security: [{ AppId: [], AppKey: [] }],
      parameters: ['Page', 'PageSize', 'Cursor'].map((name) => componentRef('parameters', name)),
      responses: {
        '200': { description: 'One page of users.', content: json(schemaRef(listSchema)) },
        '400': componentRef('responses', 'BadRequest'),
        '403': componentRef('responses', 'PermissionDenied'),
        '404': componentRef('responses', 'NotFound'),
        '405': componentRef('responses', 'MethodNotAllowed'),
        '500': componentRef('responses', 'ServerError'),
      },
    },
    options: {
      operationId: `${operationId}Options`,
      summary: 'Describe the endpoint; needs no credentials.',
      responses: {
        '200': componentRef('responses', 'Options'),
        '404': { description: 'Unknown API version.', content: json(schemaRef('Error'), errorExamples('Not found.')) },
      },
    },
  };
}

/**
 * The OpenAPI 3.1 description of the user listings, the SCIM routes and the webhooks sent to partners, served at
 * /openapi.json, and of the internal API, whose every operation states the token scopes it needs. SCIM's bearer
 * token is required in it exactly where SCIM_BEARER_TOKEN is set.
 */
export function openApiDocument(config: Pick<Config, 'API_VERSIONS' | 'SCIM_BEARER_TOKEN'>) {
  // Security is stated where the running deployment demands it, and only there.
  const scimSecured = Boolean(config.SCIM_BEARER_TOKEN);
  return {
    openapi: '3.1.0',
    info: {
      title: 'Partner Integration Service',
      version: '1.0.0',
      description:
        'Read-only, paged listings of the users of a company and of a job, with Django REST Framework conventions. ' +
        'Every request carries X-App-Id and X-App-Key; an app reads only the companies it was granted, and ' +
        'their jobs.\n\n' +
        'The read-only SCIM 2.0 service provider is under /scim/v2. The webhooks the service POSTs to the ' +
        'partner endpoint ' +
        'are listed under Webhooks, each with the JSON Schema of its body.\n\n' +
        SIGNATURE_GUIDE,
    },
    tags: [
      {
        name: 'partner',
        description:
          "The partner's own window under /partner/v1, with the listings' X-App-Id and X-App-Key: its deliveries " +
          'and why each is where it is, their recovery, its endpoint, its signing secrets and test events. Each ' +
          'operation names the app scope it needs (`x-app-scope`).',
      },
    ],
    paths: {
      '/{api_version}/companies/{company_pk}/users/': listingPath(
        "List a company's users",
        'CompanyPk',
        'PaginatedCompanyUserList',
        'listCompanyUsers',
      ),
      '/{api_version}/jobs/{job_pk}/users/': listingPath(
        "List a job's users: its explicit roles, plus every admin and owner of its company",
        'JobPk',
        'PaginatedJobUserList',
        'listJobUsers',
      ),
      ...scimPaths(scimSecured),
      ...withAuditActions(internalPaths),
      ...withAuditActions(partnerApiPaths),
    },
    webhooks: webhookCatalog(),
    components: {
      schemas: { ...schemas, ...scimSchemas, ...webhookSchemas(), ...internalSchemas, ...partnerApiSchemas },
      parameters: parameters(config.API_VERSIONS),
      responses,
      securitySchemes: {
        AppId: {
          type: 'apiKey',
          in: 'header',
          name: 'X-App-Id',
          description: 'The app id printed by `partner-service apps create`.',
        },
        AppKey: {
          type: 'apiKey',
          in: 'header',
          name: 'X-App-Key',
          description: 'The app key printed once by `partner-service apps create`.',
        },
        PortalSession: {
          type: 'apiKey',
          in: 'cookie',
          name: 'portal_session',
          description:
            "The partner portal's session, set by POST /partner/v1/portal-sessions/open; its writes also need " +
            'X-CSRF-Token, the value of the portal_csrf cookie.',
        },
        ...(scimSecured && { ScimToken: scimTokenScheme }),
        PartnerToken: partnerTokenScheme,
        InternalToken: {
          type: 'http',
          scheme: 'bearer',
          description:
            'A named token made by `partner-service tokens create`, with the scopes each operation names ' +
            '(ingest, read, operate, erase), ' +
            'or the shared INTERNAL_API_TOKEN, which has each of those. The scope decode is for the codec ' +
            'server (/codec), outside this document.',
        },
      },
    },
  };
}
