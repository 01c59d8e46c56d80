import type { ParsedUrlQuery } from 'node:querystring';
import { invalidFilter, invalidValue } from './errors';
import { parseAttributePath } from './filter/attribute-path';
import { parseProjection, type Projection } from './projection';
import type { ScimResource } from './resource-definition';
import { resolveAttribute } from './resolve-attribute';
import { raw, sql, type SqlFragment } from '../../../db/sql';

export const DEFAULT_COUNT = 100;
export const MAX_COUNT = 1000;

export type SortOrder = 'ascending' | 'descending';

export interface ListParameters {
  readonly filter?: string;
  /** 1-based. */
  readonly startIndex: number;
  readonly count: number;
  readonly sortBy?: string;
  readonly sortOrder: SortOrder;
  readonly projection: Projection;
}

/** Reads the query of a list request (parameter names in any letter case). Bad values are 400 invalidValue. */
export function parseListParameters(resource: ScimResource, query: ParsedUrlQuery): ListParameters {
  const value = singleValues(query);
  const sortBy = present(value.sortby) ? sortAttribute(resource, value.sortby) : undefined;
  return {
    filter: value.filter,
    startIndex: Math.max(1, integer('startIndex', value.startindex) ?? 1),
    count: Math.min(MAX_COUNT, Math.max(0, integer('count', value.count) ?? DEFAULT_COUNT)),
    sortBy,
    sortOrder: sortOrder(value.sortorder),
    projection: parseProjection(resource, value.attributes, value.excludedattributes),
  };
}

/** Reads `attributes` and `excludedAttributes` only, for GET {endpoint}/{id}. */
export function parseProjectionParameters(resource: ScimResource, query: ParsedUrlQuery): Projection {
  const value = singleValues(query);
  return parseProjection(resource, value.attributes, value.excludedattributes);
}

/** `ORDER BY` for the parameters: missing values last when ascending, first when descending; ties by id. */
export function orderBy(
  resource: ScimResource,
  { sortBy, sortOrder }: Pick<ListParameters, 'sortBy' | 'sortOrder'>,
): SqlFragment {
  const id = resource.sortBy.id;
  if (!sortBy) return id; // sortOrder alone has no effect (RFC 7644 section 3.4.2.3)
  const direction = raw(sortOrder === 'descending' ? 'DESC NULLS FIRST' : 'ASC NULLS LAST');
  if (sortBy === 'id') return sql`${id} ${direction}`;
  return sql`${resource.sortBy[sortBy]} ${direction}, ${id}`;
}

/**
 * An empty (or blank) `sortBy` is taken as absent: no sort. Clients that build the query from optional settings
 * send `?sortBy=`, and "nothing asked" is what they mean. (An empty `filter` stays a malformed filter, 400.)
 */
const present = (text: string | undefined): text is string => text !== undefined && text.trim() !== '';

/** Lower-cased parameter name to its one value; a repeated parameter is an error. */
function singleValues(query: ParsedUrlQuery): Record<string, string | undefined> {
  const values: Record<string, string | undefined> = {};
  const seen = new Set<string>();
  for (const [name, raw] of Object.entries(query)) {
    const key = name.toLowerCase();
    if (raw === undefined) continue;
    if (seen.has(key) || Array.isArray(raw)) {
      const detail = `The ${name} parameter is given more than once`;
      throw key === 'filter' ? invalidFilter(detail) : invalidValue(detail);
    }
    seen.add(key);
    values[key] = raw;
  }
  return values;
}

function integer(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (!/^[+-]?\d+$/.test(text.trim())) throw invalidValue(`${name} must be an integer, not "${shorten(text)}"`);
  return Math.min(Number(text), Number.MAX_SAFE_INTEGER);
}

function sortAttribute(resource: ScimResource, text: string): string {
  const path = parseAttributePath(text.trim());
  const resolved = path && resolveAttribute(resource, path);
  if (!resolved || !Object.hasOwn(resource.sortBy, resolved.name)) {
    throw invalidValue(
      `sortBy "${shorten(text)}" is not sortable; use one of ${Object.keys(resource.sortBy).join(', ')}`,
    );
  }
  return resolved.name;
}

function sortOrder(text: string | undefined): SortOrder {
  if (text === undefined) return 'ascending';
  const order = text.trim().toLowerCase();
  if (order === 'ascending' || order === 'descending') return order;
  throw invalidValue(`sortOrder must be ascending or descending, not "${shorten(text)}"`);
}

const shorten = (text: string) => (text.length > 40 ? `${text.slice(0, 40)}...` : text);
