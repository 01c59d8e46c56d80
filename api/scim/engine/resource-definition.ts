import type { ResourceSchema } from './attributes';
import type { Projection } from './projection';
import type { SqlFragment } from '../../../db/sql';
import type { ResourceQueries } from './store';

/**
 * One SCIM resource type, as the engine serves it: `GET {endpoint}` (filter, sort, page, project) and
 * `GET {endpoint}/{id}` (with ETag), plus its /ResourceTypes and /Schemas documents. Filters compile from
 * `attributes` (each leaf's `sql`, each multi-valued attribute's `exists`). `Row` is what the queries
 * return; `Include` which optional parts of a row to read.
 */
export interface ScimResourceDefinition<Row = unknown, Include = unknown> extends ResourceSchema {
  /** The resource type's name and id, also meta.resourceType: `Group`. */
  readonly name: string;
  /** Path under the SCIM base URL: `/Groups`. */
  readonly endpoint: string;
  /** The /ResourceTypes description. */
  readonly description: string;
  /** The /Schemas description. */
  readonly schemaDescription: string;
  /**
   * sortBy attributes by canonical name, in the order a sortBy error lists them. `id` is required: it is
   * the default order and breaks ties, so paging never skips or repeats a row.
   */
  readonly sortBy: Readonly<Record<string, SqlFragment>> & { readonly id: SqlFragment };
  /** Whether `GET {endpoint}/{id}` may name a row; other ids answer 404 without a query. */
  isId(id: string): boolean;
  /** What the queries must read for a projection. */
  include(projection: Projection): Include;
  readonly queries: ResourceQueries<Include>;
  /** The full resource, before projection; absent values omitted. */
  serialize(row: Row, baseUrl: string): Record<string, unknown>;
  /** The ETag header, the same as meta.version. */
  version(row: Row): string;
  /**
   * With `queries.renderedPage`: the top-level attributes that `include` leaves out of a rendered resource.
   * A list whose projection names no `attributes` and excludes only these is rendered by PostgreSQL.
   */
  readonly renderedOmits?: ReadonlySet<string>;
}

/** A definition with the lookups the engine derives from it once, at module load. */
export interface ScimResource<Row = unknown, Include = unknown> extends ScimResourceDefinition<Row, Include> {
  /** `schemas` and the attributes returned "always": no projection removes them. */
  readonly alwaysReturned: ReadonlySet<string>;
}

export function defineScimResource<Row, Include>(
  definition: ScimResourceDefinition<Row, Include>,
): ScimResource<Row, Include> {
  const always = definition.attributes.filter((a) => a.returned === 'always').map((a) => a.name);
  return { ...definition, alwaysReturned: new Set(['schemas', ...always]) };
}
