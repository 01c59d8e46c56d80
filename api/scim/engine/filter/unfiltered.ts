import { raw, type SqlFragment } from '../../../../db/sql';

/** The predicate of a list request without a filter; a resource's count query may answer it from a counter. */
export const NO_FILTER = raw('TRUE');

/** Compared by content, not identity: a request that crossed a process boundary (the bench baseline) is a copy. */
export const isUnfiltered = (where: SqlFragment) => where.sql === NO_FILTER.sql && where.bindings.length === 0;
