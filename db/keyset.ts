import { raw, sql, type SqlFragment } from './sql';

// Keyset paging, newest first, on (a timestamptz column, an id column): the delivery log and the audit trail.
// A row's time travels in microseconds as text, exact where a JS Date keeps milliseconds only.

/** A page to read: at most `limit` rows, after the position a cursor gave (none: the first page). */
export interface PageRequest<Position> {
  readonly limit: number;
  readonly after?: Position;
}

/** The column's time in microseconds since the epoch, as text. */
export const microsecondsOf = (timeColumn: string): SqlFragment =>
  raw(`(extract(epoch FROM ${timeColumn}) * 1000000)::bigint::text`);

/** A bound of a keyset page: rows on one side of `position` in (time, id) order, the id compared as `idType`. */
export type KeysetBound = (
  timeColumn: string,
  idColumn: string,
  idType: 'uuid' | 'bigint',
  position: { readonly us: string; readonly id: string },
) => SqlFragment;

/**
 * Rows after `position` in newest-first order: (time, id) below the position's. The time's own bound repeats the
 * row comparison's first column: beside another bound on the time (a filter's `until`), the index scan can then
 * start at the position instead of reading every entry between the two.
 */
export const olderThan: KeysetBound = (...bound) => beyond('<', ...bound);

/**
 * Rows before `position` in newest-first order (a `previous` link): (time, id) above the position's. Read them
 * oldest first (ascending) and reverse the page, so the rows nearest the position come first from the index.
 */
export const newerThan: KeysetBound = (...bound) => beyond('>', ...bound);

function beyond(direction: '<' | '>', ...[timeColumn, idColumn, idType, position]: Parameters<KeysetBound>) {
  const time = sql`timestamptz 'epoch' + ${position.us}::bigint * interval '1 microsecond'`;
  return sql`${raw(timeColumn)} ${raw(`${direction}=`)} ${time} AND (${raw(timeColumn)}, ${raw(idColumn)}) ${raw(
    direction,
  )} (${time}, ${position.id}::${raw(idType)})`;
}

/**
 * A page from a query that fetched `limit + 1` rows (one more says whether a next page exists): its rows without
 * their `position_us`, and the last one's position and row when there is a next page.
 */
export function keysetPage<Row extends { readonly position_us: string }>(
  rows: readonly Row[],
  limit: number,
): { rows: Array<Omit<Row, 'position_us'>>; last?: Row } {
  const page = rows.slice(0, limit);
  return {
    rows: page.map(({ position_us: _position, ...row }) => row),
    last: rows.length > limit ? page.at(-1) : undefined,
  };
}
