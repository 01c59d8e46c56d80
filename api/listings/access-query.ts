import type { Knex } from 'knex';
import { runSql, type SqlFragment } from '../../db/sql';
import type { ListingTarget } from './scope';

export interface AppAccessRow {
  readonly key_salt: Buffer;
  readonly key_hash: Buffer;
  /** The app's scopes: the listings need `listings`. */
  readonly scopes: string[];
  /** The target's company when the app was granted it, else null (also when the target does not exist). */
  readonly granted_company_id: string | null;
}

/** PostgreSQL text cannot hold NUL, so an id with one names nothing, just like '' (ids are never empty). */
const storable = (id: string) => (id.includes('\0') ? '' : id);

/**
 * One primary-key lookup of an active app, joined with its grant for the target's company. A revoked app
 * finds no row, so revocation takes effect on the next request.
 */
function appAccessQuery(appId: string, target: ListingTarget): SqlFragment {
  const targetCompany = target.kind === 'company' ? '?' : '(SELECT j.company_id FROM jobs j WHERE j.id = ?)';
  return {
    sql: `SELECT a.key_salt, a.key_hash, a.scopes, g.company_id AS granted_company_id
      FROM partner_apps a
      LEFT JOIN partner_app_companies g ON g.app_id = a.app_id AND g.company_id = ${targetCompany}
      WHERE a.app_id = ? AND a.revoked_at IS NULL`,
    bindings: [storable(target.kind === 'company' ? target.companyId : target.jobId), storable(appId)],
  };
}

export async function findAppAccess(
  knex: Knex,
  appId: string,
  target: ListingTarget,
): Promise<AppAccessRow | undefined> {
  const [row] = await runSql<AppAccessRow>(knex, appAccessQuery(appId, target));
  return row;
}
