import { raw } from '../../../../db/sql';

/**
 * The predicate of a list request without a filter (and of a filter that holds for every row). It is one
 * object, compared by identity: a resource's count query answers it from a counter.
 */
export const NO_FILTER = raw('TRUE');
