import type { SqlFragment } from '../../db/sql';
import type { ListingScope } from './scope';

/**
 * `(user_id, role)` of everyone who has access to the scope, each user once.
 * A job's users are its explicit job roles plus every admin and owner of its company (they see all of the
 * company's jobs); a user in both keeps the company role. `role IN ('admin', 'owner')` is written exactly
 * as the predicate of company_users_admins_idx so that index serves it.
 */
export function membersQuery(scope: ListingScope): SqlFragment {
  if (scope.kind === 'company') {
    return {
      sql: 'SELECT cu.user_id, cu.role FROM company_users cu WHERE cu.company_id = ?',
      bindings: [scope.companyId],
    };
  }
  return {
    sql: `SELECT cu.user_id, cu.role FROM company_users cu
        WHERE cu.company_id = ? AND cu.role IN ('admin', 'owner')
      UNION ALL
      SELECT ju.user_id, ju.role FROM job_users ju
        WHERE ju.job_id = ? AND NOT EXISTS (
          SELECT 1 FROM company_users ca
          WHERE ca.company_id = ? AND ca.user_id = ju.user_id AND ca.role IN ('admin', 'owner'))`,
    bindings: [scope.companyId, scope.jobId, scope.companyId],
  };
}
