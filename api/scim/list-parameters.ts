import type { ParsedUrlQuery } from 'node:querystring';
import { invalidFilter, invalidValue } from './errors';
import { parseAttributePath } from './filter/attribute-path';
import { folded } from './group-sql';
import { parseProjection, type Projection } from './projection';
import { resolveGroupAttribute } from './resolve-attribute';
import { raw, sql, type SqlFragment } from './sql-fragment';

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

/** Sortable attributes and the SQL they sort by; ties are broken by id, so paging is stable. */
const SORT_EXPRESSIONS: Readonly<Record<string, SqlFragment>> = {
  id: raw('g.id'),
  displayName: folded(raw('g.display_name')),
  // An empty externalId counts as missing, as in `pr`.
  externalId: raw(`NULLIF(g.external_id, '') COLLATE "C"`),
  'meta.created': raw('g.created'),
  'meta.lastModified': raw('g.last_modified'),
};

/** Reads the query of GET /Groups (parameter names in any letter case). Bad values are 400 invalidValue. */
export function parseListParameters(query: ParsedUrlQuery): ListParameters {
  const value = singleValues(query);
  const sortBy = value.sortby === undefined ? undefined : sortAttribute(value.sortby);
  return {
    filter: value.filter,
    startIndex: Math.max(1, integer('startIndex', value.startindex) ?? 1),
    count: Math.min(MAX_COUNT, Math.max(0, integer('count', value.count) ?? DEFAULT_COUNT)),
    sortBy,
    sortOrder: sortOrder(value.sortorder),
    projection: parseProjection(value.attributes, value.excludedattributes),
  };
}

/** Reads `attributes` and `excludedAttributes` only, for GET /Groups/{id}. */
export function parseProjectionParameters(query: ParsedUrlQuery): Projection {
  const value = singleValues(query);
  return parseProjection(value.attributes, value.excludedattributes);
}

/** `ORDER BY` for the parameters: missing values last when ascending, first when descending. */
export function orderBy({ sortBy, sortOrder }: Pick<ListParameters, 'sortBy' | 'sortOrder'>): SqlFragment {
  if (!sortBy) return raw('g.id'); // sortOrder alone has no effect (RFC 7644 section 3.4.2.3)
  const direction = raw(sortOrder === 'descending' ? 'DESC NULLS FIRST' : 'ASC NULLS LAST');
  if (sortBy === 'id') return sql`g.id ${direction}`;
  return sql`${SORT_EXPRESSIONS[sortBy]} ${direction}, g.id`;
}

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

function sortAttribute(text: string): string {
  const path = parseAttributePath(text.trim());
  const resolved = path && resolveGroupAttribute(path);
  if (!resolved || !(resolved.name in SORT_EXPRESSIONS)) {
    throw invalidValue(`sortBy "${shorten(text)}" is not sortable; use one of ${Object.keys(SORT_EXPRESSIONS).join(', ')}`);
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
