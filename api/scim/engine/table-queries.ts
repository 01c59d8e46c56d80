import { NO_FILTER } from './filter/unfiltered';
import { sql, type SqlFragment } from '../../../db/sql';
import type { ResourceQueries } from './store';

/** A resource read from one table: what differs between Groups and Users, the statements being the same. */
export interface TableQueriesSpec {
  /** The table with its alias, such as `scim_groups g`: trusted source text. */
  readonly from: SqlFragment;
  /** The selected columns, with the optional part (members, groups) when `include` says so. */
  readonly columns: (include: boolean) => SqlFragment;
  /** The one-row counter that statement-level triggers keep exact, for the unfiltered total. */
  readonly counter: SqlFragment;
  /** Compares the id column with an id that has passed the resource's `isId`. */
  readonly idEquals: (id: string) => SqlFragment;
  /**
   * Optional: the resource as a json_build_object expression whose absent values are NULL (json_strip_nulls
   * drops them), for pages PostgreSQL renders.
   */
  readonly rendered?: (include: boolean, baseUrl: string) => SqlFragment;
}

/** Page, count and by-id statements of a one-table resource; `Include` is whether to read its optional part. */
export function tableQueries({
  from,
  columns,
  counter,
  idEquals,
  rendered,
}: TableQueriesSpec): ResourceQueries<boolean> {
  return {
    ...(rendered && {
      renderedPage(
        where: SqlFragment,
        order: SqlFragment,
        limit: number,
        offset: number,
        include: boolean,
        baseUrl: string,
      ) {
        // json_strip_nulls also writes compact JSON, as JSON.stringify does, keeping the key order.
        return sql`SELECT json_strip_nulls(${rendered(include, baseUrl)})::text AS resource FROM ${from} WHERE ${where}
          ORDER BY ${order} LIMIT ${limit} OFFSET ${offset}`;
      },
    }),
    page(where, order, limit, offset, include) {
      return sql`SELECT ${columns(include)} FROM ${from} WHERE ${where} ORDER BY ${order}
        LIMIT ${limit} OFFSET ${offset}`;
    },
    /** Unfiltered, the total is the counter row, not a count of the table. */
    count(where: SqlFragment) {
      if (where === NO_FILTER) return sql`SELECT total::integer AS total FROM ${counter}`;
      return sql`SELECT count(*)::integer AS total FROM ${from} WHERE ${where}`;
    },
    byId(id, include) {
      return sql`SELECT ${columns(include)} FROM ${from} WHERE ${idEquals(id)}`;
    },
  };
}
