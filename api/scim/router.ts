import Router from '@koa/router';
import type { Context } from 'koa';
import type { ApiDependencies } from '../context';
import { bearerAuth } from './auth';
import { groupResourceType, groupSchema, serviceProviderConfig } from './discovery';
import { scimErrors } from './error-middleware';
import { ScimError } from './errors';
import { getGroup, listGroups, scimBaseUrl, SCIM_PREFIX } from './group-handlers';
import { knexRunner } from './group-store';
import { listResponse } from './serialize-group';
import { scimMediaType } from './media-type';

const ALLOW = 'GET, HEAD';
// Relative to the prefix: the paths served here, where other methods get 405 rather than 404.
const KNOWN_PATH = /^\/(?:Groups(?:\/[^/]+)?|ServiceProviderConfig|ResourceTypes(?:\/[^/]+)?|Schemas(?:\/[^/]+)?)\/?$/i;

/**
 * The SCIM 2.0 service provider for Groups at /scim/v2 (RFC 7643, RFC 7644), read-only. Warns once per
 * server when it runs without SCIM_BEARER_TOKEN.
 */
export function scimRouter({ config, knex, logger }: ApiDependencies): Router {
  const token = config.SCIM_BEARER_TOKEN;
  if (!token) logger.warn('SCIM_BEARER_TOKEN is not set: /scim/v2 answers requests without credentials');
  const run = knexRunner(knex);
  const router = new Router({ prefix: SCIM_PREFIX });
  router.use(scimMediaType, scimErrors(logger), bearerAuth(token));

  router.get('/Groups', listGroups(run));
  router.get('/Groups/:id', getGroup(run));
  router.get('/ServiceProviderConfig', (ctx) => {
    ctx.body = serviceProviderConfig(scimBaseUrl(ctx), Boolean(token));
  });
  router.get('/ResourceTypes', (ctx) => {
    rejectFilter(ctx);
    ctx.body = listResponse([groupResourceType(scimBaseUrl(ctx))], 1, 1);
  });
  router.get('/ResourceTypes/:id', (ctx) => {
    if (String(ctx.params.id).toLowerCase() !== 'group') throw notFound(ctx);
    ctx.body = groupResourceType(scimBaseUrl(ctx));
  });
  router.get('/Schemas', (ctx) => {
    rejectFilter(ctx);
    ctx.body = listResponse([groupSchema(scimBaseUrl(ctx))], 1, 1);
  });
  router.get('/Schemas/:id', (ctx) => {
    const schema = groupSchema(scimBaseUrl(ctx));
    if (String(ctx.params.id).toLowerCase() !== schema.id.toLowerCase()) throw notFound(ctx);
    ctx.body = schema;
  });
  router.all('{/*rest}', (ctx) => {
    const relative = ctx.path.slice(SCIM_PREFIX.length);
    if (!KNOWN_PATH.test(relative)) throw notFound(ctx);
    throw new ScimError(405, `Method ${ctx.method} is not supported on ${ctx.path}; this service provider is read-only`, undefined, {
      Allow: ALLOW,
    });
  });
  return router;
}

const notFound = (ctx: Context) => new ScimError(404, `No SCIM resource at ${ctx.path}`);

/** RFC 7644 section 4: discovery endpoints answer a filter with 403. */
function rejectFilter(ctx: Context): void {
  if (ctx.query.filter !== undefined) throw new ScimError(403, 'Filtering is not supported on this discovery endpoint');
}
