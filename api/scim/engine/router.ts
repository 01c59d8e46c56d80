import type Router from '@koa/router';
import type { Knex } from 'knex';
import { createRouter } from '../../router';
import type { Context } from 'koa';
import type { Logger } from '../../../lib/logger';
import { bearerAuth } from './auth';
import { scimBaseUrl, SCIM_PREFIX } from './base-url';
import { resourceTypeDocument, schemaDocument, serviceProviderConfig } from './discovery';
import { ScimError } from './errors';
import { getResource, listResources } from './handlers';
import { listResponse } from './list-response';
import { scimResponses } from './response-middleware';
import type { ScimResource } from './resource-definition';

const ALLOW = 'GET, HEAD';

export interface ScimEngineOptions {
  /** Each served at its endpoint and described by /ResourceTypes and /Schemas, in this order. */
  readonly resources: readonly ScimResource[];
  /** The database the resources' statements run on (db/sql's runner). */
  readonly knex: Knex;
  /** With a token, every request needs it as a bearer token. */
  readonly token: string | undefined;
  readonly logger: Logger;
}

/**
 * A read-only SCIM 2.0 service provider at /scim/v2 (RFC 7643, RFC 7644) for the given resource types.
 * Responses (SCIM errors and media type) wrap auth, so even a 401 is SCIM JSON; without a token there is no
 * auth layer at all.
 */
export function scimEngineRouter({ resources, knex, token, logger }: ScimEngineOptions): Router {
  const knownPath = knownPathPattern(resources);
  const router = createRouter({ prefix: SCIM_PREFIX });
  router.use(scimResponses(logger));
  if (token) router.use(bearerAuth(token));

  for (const resource of resources) {
    router.get(resource.endpoint, listResources(resource, knex));
    router.get(`${resource.endpoint}/:id`, getResource(resource, knex));
  }
  router.get('/ServiceProviderConfig', (ctx) => {
    ctx.body = serviceProviderConfig(scimBaseUrl(ctx), Boolean(token));
  });
  serveDocuments(router, '/ResourceTypes', resources, (r) => r.name, resourceTypeDocument);
  serveDocuments(router, '/Schemas', resources, (r) => r.schema, schemaDocument);
  router.all('{/*rest}', (ctx) => {
    const relative = ctx.path.slice(SCIM_PREFIX.length);
    if (!knownPath.test(relative)) throw notFound(ctx);
    throw new ScimError(
      405,
      `Method ${ctx.method} is not supported on ${ctx.path}; this service provider is read-only`,
      undefined,
      {
        Allow: ALLOW,
      },
    );
  });
  return router;
}

/** Relative to the prefix: the paths served here, where other methods get 405 rather than 404. */
function knownPathPattern(resources: readonly ScimResource[]): RegExp {
  const endpoints = resources.map((r) => r.endpoint.slice(1).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|');
  return new RegExp(
    `^\\/(?:(?:${endpoints})(?:\\/[^/]+)?|ServiceProviderConfig|ResourceTypes(?:\\/[^/]+)?|Schemas(?:\\/[^/]+)?)\\/?$`,
    'i',
  );
}

/** `{path}` lists one document per resource (a filter is 403); `{path}/{id}` answers one by its id, in any case. */
function serveDocuments(
  router: Router,
  path: string,
  resources: readonly ScimResource[],
  idOf: (resource: ScimResource) => string,
  document: (resource: ScimResource, baseUrl: string) => object,
): void {
  const byId = new Map(resources.map((r) => [idOf(r).toLowerCase(), r]));
  router.get(path, (ctx) => {
    rejectFilter(ctx);
    const baseUrl = scimBaseUrl(ctx);
    ctx.body = listResponse(
      resources.map((r) => document(r, baseUrl)),
      resources.length,
      1,
    );
  });
  router.get(`${path}/:id`, (ctx) => {
    const resource = byId.get(String(ctx.params.id).toLowerCase());
    if (!resource) throw notFound(ctx);
    ctx.body = document(resource, scimBaseUrl(ctx));
  });
}

const notFound = (ctx: Context) => new ScimError(404, `No SCIM resource at ${ctx.path}`);

/** RFC 7644 section 4: discovery endpoints answer a filter with 403. */
function rejectFilter(ctx: Context): void {
  if (ctx.query.filter !== undefined) throw new ScimError(403, 'Filtering is not supported on this discovery endpoint');
}
