import type { SqlFragment } from '../../db/sql';
import type { ListingScope } from './scope';

/**
 * The listing's `count`, read from the counter that migration 009's triggers keep exact, instead of
 * counting up to 100k memberships per request. A scalar subquery, so it yields 0 for a missing row.
 */
export function totalQuery(scope: ListingScope): SqlFragment {
  if (scope.kind === 'company') {
    return { sql: 'SELECT c.total FROM company_listing_counts c WHERE c.company_id = ?', bindings: [scope.companyId] };
  }
  return { sql: 'SELECT j.total FROM job_listing_counts j WHERE j.job_id = ?', bindings: [scope.jobId] };
}
