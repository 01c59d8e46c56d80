import type { Knex } from 'knex';
import { groupByIdQuery, groupCountQuery, groupPageQuery, type GroupRow } from './group-queries';
import type { SqlFragment } from './sql-fragment';

/** Runs one query and returns its rows: knex in the API, a bare pg pool in the benchmark baseline. */
export type QueryRunner = <Row>(query: SqlFragment) => Promise<Row[]>;

export const knexRunner = (knex: Knex): QueryRunner => async <Row>(query: SqlFragment) =>
  (await knex.raw<{ rows: Row[] }>(query.sql, query.bindings as Knex.RawBinding[])).rows;

export interface GroupPageRequest {
  readonly where: SqlFragment;
  readonly order: SqlFragment;
  /** 1-based. */
  readonly startIndex: number;
  readonly count: number;
  /** Whether to read members at all; Entra's excludedAttributes=members makes this false. */
  readonly withMembers: boolean;
}

export interface GroupPage {
  readonly totalResults: number;
  readonly groups: readonly GroupRow[];
}

/**
 * One page of groups, members included when asked for. The count query is skipped when the page itself
 * proves the total: a short, non-empty page, or an empty first page.
 */
export async function findGroupPage(run: QueryRunner, request: GroupPageRequest): Promise<GroupPage> {
  const { where, order, startIndex, count, withMembers } = request;
  const offset = startIndex - 1;
  const countTotal = async () => (await run<{ total: number }>(groupCountQuery(where)))[0].total;
  if (count === 0) return { totalResults: await countTotal(), groups: [] };
  const groups = await run<GroupRow>(groupPageQuery(where, order, count, offset, withMembers));
  const provesTotal = groups.length < count && (groups.length > 0 || offset === 0);
  return { totalResults: provesTotal ? offset + groups.length : await countTotal(), groups };
}

export async function findGroup(run: QueryRunner, id: string, withMembers: boolean): Promise<GroupRow | undefined> {
  const [group] = await run<GroupRow>(groupByIdQuery(id, withMembers));
  return group;
}
