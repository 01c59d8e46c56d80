import { raw, sql, type SqlFragment } from '../db/sql';

// Keyset paging, newest first, on (a timestamptz column, an id column): the delivery log and the audit trail.
// A row's time travels in microseconds as text, exact where a JS Date keeps milliseconds only.

/** The column's time in microseconds since the epoch, as text. */
export const microsecondsOf = (timeColumn: string): SqlFragment => raw(`(extract(epoch FROM ${timeColumn}) * 1000000)::bigint::text`);

/** Rows after `position` in newest-first order: (time, id) below the position's, the id compared as `idType`. */
export function olderThan(timeColumn: string, idColumn: string, idType: 'uuid' | 'bigint', position: { readonly us: string; readonly id: string }): SqlFragment {
  return sql`(${raw(timeColumn)}, ${raw(idColumn)}) < (timestamptz 'epoch' + ${position.us}::bigint * interval '1 microsecond', ${position.id}::${raw(idType)})`;
}
