import type { ParsedUrlQuery } from 'node:querystring';
import type { Knex } from 'knex';
import type { Context } from 'koa';
import { scimBaseUrl } from './base-url';
import { ScimError } from './errors';
import { compileFilter } from './filter/compile-sql';
import { parseFilter } from './filter/parser';
import { NO_FILTER } from './filter/unfiltered';
import { listResponse, listResponseText } from './list-response';
import { orderBy, parseListParameters, parseProjectionParameters, type ListParameters } from './list-parameters';
import { project, type Projection } from './projection';
import type { ScimResource } from './resource-definition';
import { findById, findPage, type PageRequest, type RenderedRow } from './store';

/** Reads the query of a list request into the page request for PostgreSQL. */
export function planList<Include>(
  resource: ScimResource<unknown, Include>,
  query: ParsedUrlQuery,
  baseUrl: string,
): { parameters: ListParameters; request: PageRequest<Include> } {
  const parameters = parseListParameters(resource, query);
  const where =
    parameters.filter === undefined ? NO_FILTER : compileFilter(resource, parseFilter(parameters.filter), baseUrl);
  return {
    parameters,
    request: {
      where,
      order: orderBy(resource, parameters),
      startIndex: parameters.startIndex,
      count: parameters.count,
      include: resource.include(parameters.projection),
      ...(isRendered(resource, parameters.projection) && { renderedFor: baseUrl }),
    },
  };
}

/** PostgreSQL renders the page when the projection only leaves out what `include` already leaves out. */
function isRendered(resource: ScimResource<unknown, unknown>, projection: Projection): boolean {
  const omits = resource.renderedOmits;
  if (!resource.queries.renderedPage || !omits || projection.attributes !== undefined) return false;
  for (const name of projection.excluded) if (!omits.has(name)) return false;
  return true;
}

/** GET {endpoint}: filter, sort and page in PostgreSQL; optional parts are read only when returned. */
export function listResources<Row, Include>(resource: ScimResource<Row, Include>, knex: Knex) {
  return async function listResources(ctx: Context) {
    const baseUrl = scimBaseUrl(ctx);
    const { parameters, request } = planList(resource, ctx.query, baseUrl);
    if (request.renderedFor !== undefined) {
      const page = await findPage<RenderedRow, Include>(knex, resource.queries, request);
      ctx.body = listResponseText(
        page.rows.map((row) => row.resource),
        page.totalResults,
        parameters.startIndex,
      );
      return;
    }
    const page = await findPage<Row, Include>(knex, resource.queries, request);
    const resources = page.rows.map((row) => project(resource.serialize(row, baseUrl), parameters.projection));
    ctx.body = listResponse(resources, page.totalResults, parameters.startIndex);
  };
}

/** GET {endpoint}/{id}: the resource with an ETag; If-None-Match with the current version answers 304. */
export function getResource<Row, Include>(resource: ScimResource<Row, Include>, knex: Knex) {
  return async function getResource(ctx: Context) {
    const id = String(ctx.params.id);
    const projection = parseProjectionParameters(resource, ctx.query);
    const row = resource.isId(id)
      ? await findById<Row, Include>(knex, resource.queries, id, resource.include(projection))
      : undefined;
    if (!row) throw new ScimError(404, `${resource.name} ${JSON.stringify(id)} not found`);
    ctx.set('ETag', resource.version(row));
    ctx.status = 200;
    if (ctx.fresh) {
      ctx.status = 304;
      return;
    }
    ctx.body = project(resource.serialize(row, scimBaseUrl(ctx)), projection);
  };
}
