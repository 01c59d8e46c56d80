import type Router from '@koa/router';
import type { ApiDependencies } from '../context';
import { scimEngineRouter } from './engine/router';
import { groupResource } from './groups/resource';
import { userResource } from './users/resource';

/**
 * The SCIM 2.0 service provider at /scim/v2, read-only: the engine serving each resource definition.
 * Warns once per server when it runs without SCIM_BEARER_TOKEN.
 */
export function scimRouter({ config, knex, logger }: ApiDependencies): Router {
  const token = config.SCIM_BEARER_TOKEN;
  if (!token) logger.warn('SCIM_BEARER_TOKEN is not set: /scim/v2 answers requests without credentials');
  return scimEngineRouter({ resources: [groupResource, userResource], knex, token, logger });
}
