import type { ParsedUrlQuery } from 'node:querystring';
import type { Context } from 'koa';
import { requestOrigin } from '../request-origin';
import { invalidValue, ScimError } from './errors';
import { compileFilter } from './filter/compile-sql';
import { parseFilter } from './filter/parser';
import { isGroupId, NO_FILTER } from './group-queries';
import { findGroup, findGroupPage, type GroupPageRequest, type QueryRunner } from './group-store';
import { orderBy, parseListParameters, parseProjectionParameters, type ListParameters } from './list-parameters';
import { isReturned } from './projection';
import { groupVersion, listResponse, projectedGroup } from './serialize-group';

export const SCIM_PREFIX = '/scim/v2';

/** Absolute SCIM base URL of this request, for `meta.location` and `$ref`. */
/** The absolute SCIM base URL of this request, for `location` and `$ref`; a bad Host header is a 400. */
export function scimBaseUrl(ctx: Context): string {
  const origin = requestOrigin(ctx);
  if (!origin) throw invalidValue('Invalid Host header.');
  return `${origin}${SCIM_PREFIX}`;
}

/** Reads the query of GET /Groups into the page request for PostgreSQL (also used by the benchmark). */
export function planGroupList(query: ParsedUrlQuery, baseUrl: string): { parameters: ListParameters; request: GroupPageRequest } {
  const parameters = parseListParameters(query);
  const where = parameters.filter === undefined ? NO_FILTER : compileFilter(parseFilter(parameters.filter), baseUrl);
  return {
    parameters,
    request: {
      where,
      order: orderBy(parameters),
      startIndex: parameters.startIndex,
      count: parameters.count,
      withMembers: isReturned(parameters.projection, 'members'),
    },
  };
}

/** GET /Groups: filter, sort and page in PostgreSQL; load members only when they are returned. */
export function listGroups(run: QueryRunner) {
  return async (ctx: Context) => {
    const baseUrl = scimBaseUrl(ctx);
    const { parameters, request } = planGroupList(ctx.query, baseUrl);
    const page = await findGroupPage(run, request);
    const resources = page.groups.map((group) => projectedGroup(group, baseUrl, parameters.projection));
    ctx.body = listResponse(resources, page.totalResults, parameters.startIndex);
  };
}

/** GET /Groups/{id}: the group with an ETag; If-None-Match with the current version answers 304. */
export function getGroup(run: QueryRunner) {
  return async (ctx: Context) => {
    const id = String(ctx.params.id);
    const projection = parseProjectionParameters(ctx.query);
    const group = isGroupId(id) ? await findGroup(run, id, isReturned(projection, 'members')) : undefined;
    if (!group) throw new ScimError(404, `Group ${JSON.stringify(id)} not found`);
    ctx.set('ETag', groupVersion(group));
    ctx.status = 200;
    if (ctx.fresh) {
      ctx.status = 304;
      return;
    }
    ctx.body = projectedGroup(group, scimBaseUrl(ctx), projection);
  };
}
