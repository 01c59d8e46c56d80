import type { Knex } from 'knex';
import { runSql } from '../../db/sql';
import type { AppScope } from '../../lib/vocabulary';

/** An active app as the partner API sees it: its key's salted hash, its scopes and its granted companies. */
export interface ActiveAppRow {
  readonly app_id: string;
  readonly name: string;
  readonly key_salt: Buffer;
  readonly key_hash: Buffer;
  readonly scopes: AppScope[];
  readonly company_ids: string[];
}

/** PostgreSQL text cannot hold NUL, so an id with one names nothing (ids are never empty). */
const storable = (id: string) => (id.includes('\0') ? '' : id);

/** One primary-key lookup of an app that is not revoked, with its grants: revocation counts on the next request. */
export async function findActiveApp(knex: Knex, appId: string): Promise<ActiveAppRow | undefined> {
  const [row] = await runSql<ActiveAppRow>(knex, {
    sql: `SELECT a.app_id, a.name, a.key_salt, a.key_hash, a.scopes,
        COALESCE((SELECT array_agg(g.company_id ORDER BY g.company_id)
          FROM partner_app_companies g WHERE g.app_id = a.app_id), '{}') AS company_ids
      FROM partner_apps a
      WHERE a.app_id = ? AND a.revoked_at IS NULL`,
    bindings: [storable(appId)],
  });
  return row;
}
