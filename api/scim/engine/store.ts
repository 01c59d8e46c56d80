import type { Knex } from 'knex';
import { runSql, type SqlFragment } from '../../../db/sql';

/** A resource type's statements. `Include` says which optional parts (such as Groups' members) to read. */
export interface ResourceQueries<Include> {
  page(where: SqlFragment, order: SqlFragment, limit: number, offset: number, include: Include): SqlFragment;
  /** `where` may be NO_FILTER (see filter/unfiltered), which a resource may answer from a counter. */
  count(where: SqlFragment): SqlFragment;
  /** `id` has passed the resource's `isId`. */
  byId(id: string, include: Include): SqlFragment;
  /**
   * Optional: the page as rows of one `resource` column, each resource's JSON text exactly as serialize()
   * and JSON.stringify would write it, rendered by PostgreSQL.
   */
  renderedPage?(
    where: SqlFragment,
    order: SqlFragment,
    limit: number,
    offset: number,
    include: Include,
    baseUrl: string,
  ): SqlFragment;
}

/** A row of a rendered page. */
export interface RenderedRow {
  readonly resource: string;
}

/** A list request as PostgreSQL reads it: the compiled filter and order, the window and the optional parts. */
export interface PageRequest<Include> {
  readonly where: SqlFragment;
  readonly order: SqlFragment;
  /** 1-based. */
  readonly startIndex: number;
  readonly count: number;
  readonly include: Include;
  /** Set when the page is rendered by PostgreSQL (`renderedPage`): the base URL its links use. */
  readonly renderedFor?: string;
}

export interface Page<Row> {
  readonly totalResults: number;
  readonly rows: readonly Row[];
}

/**
 * One page of rows, each statement run by db/sql's runner on knex's pool. The count query is skipped when the
 * page itself proves the total: a short, non-empty page, or an empty first page.
 */
export async function findPage<Row, Include>(
  knex: Knex,
  queries: ResourceQueries<Include>,
  request: PageRequest<Include>,
): Promise<Page<Row>> {
  const { where, order, startIndex, count, include, renderedFor } = request;
  const offset = startIndex - 1;
  const countTotal = async () => (await runSql<{ total: number }>(knex, queries.count(where)))[0].total;
  if (count === 0) return { totalResults: await countTotal(), rows: [] };
  const page =
    renderedFor !== undefined && queries.renderedPage
      ? queries.renderedPage(where, order, count, offset, include, renderedFor)
      : queries.page(where, order, count, offset, include);
  const rows = await runSql<Row>(knex, page);
  const provesTotal = rows.length < count && (rows.length > 0 || offset === 0);
  return { totalResults: provesTotal ? offset + rows.length : await countTotal(), rows };
}

export async function findById<Row, Include>(
  knex: Knex,
  queries: ResourceQueries<Include>,
  id: string,
  include: Include,
): Promise<Row | undefined> {
  const [row] = await runSql<Row>(knex, queries.byId(id, include));
  return row;
}
