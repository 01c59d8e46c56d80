import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { endPortalSessionsOfApp } from '../application/access/portal-sessions';
import { generateAppKey, hashAppKey } from '../lib/app-keys';
import { UnknownCompaniesError } from '../lib/errors';
import { DEFAULT_APP_SCOPES, type AppScope } from '../lib/vocabulary';

export interface CreatedApp {
  readonly appId: string;
  /** Shown once to its owner; only its salted hash is stored. */
  readonly appKey: string;
}

export interface AppSummary {
  readonly app_id: string;
  readonly name: string;
  /** `revoked` once revoked_at is set: the same word in the text and the JSON listing. */
  readonly status: 'active' | 'revoked';
  readonly created_at: Date;
  readonly revoked_at: Date | null;
  readonly companies: string[];
  readonly scopes: AppScope[];
}

/** A new app's id, made before its transaction so that its audit row can name it. */
export const newAppId = () => `app_${randomBytes(9).toString('base64url')}`;

/** Creates an app granted `companyIds`, in one transaction: on any error nothing is written. */
export async function createPartnerApp(
  knex: Knex,
  name: string,
  companyIds: readonly string[],
  appId = newAppId(),
  scopes: readonly AppScope[] = DEFAULT_APP_SCOPES,
): Promise<CreatedApp> {
  const companies = [...new Set(companyIds)];
  return knex.transaction(async (trx) => {
    const found = new Set((await trx('companies').whereIn('id', companies).pluck('id')) as string[]);
    const unknown = companies.filter((id) => !found.has(id));
    if (unknown.length) throw new UnknownCompaniesError(unknown);
    const appKey = generateAppKey();
    const { salt, hash } = hashAppKey(appKey);
    await trx('partner_apps').insert({ app_id: appId, name, key_salt: salt, key_hash: hash, scopes: [...scopes] });
    await trx('partner_app_companies').insert(companies.map((company_id) => ({ app_id: appId, company_id })));
    return { appId, appKey };
  });
}

/** Every app with its granted companies, oldest first. Keys and hashes are never read. */
export async function listPartnerApps(knex: Knex): Promise<AppSummary[]> {
  return knex('partner_apps as a')
    .leftJoin('partner_app_companies as g', 'g.app_id', 'a.app_id')
    .groupBy('a.app_id')
    .orderBy([{ column: 'a.created_at' }, { column: 'a.app_id' }])
    .select(
      'a.app_id',
      'a.name',
      'a.created_at',
      'a.revoked_at',
      'a.scopes',
      knex.raw("CASE WHEN a.revoked_at IS NULL THEN 'active' ELSE 'revoked' END AS status"),
      knex.raw(
        "COALESCE(array_agg(g.company_id ORDER BY g.company_id) FILTER (WHERE g.company_id IS NOT NULL), '{}') " +
          'AS companies',
      ),
    );
}

export type RevokeOutcome = 'revoked' | 'already-revoked' | 'unknown';

/**
 * Marks the app revoked and ends its portal sessions; the API checks the app on every request (a portal session's
 * too), so it takes effect at once.
 */
export async function revokePartnerApp(knex: Knex, appId: string): Promise<RevokeOutcome> {
  const updated = await knex('partner_apps')
    .where({ app_id: appId })
    .whereNull('revoked_at')
    .update({ revoked_at: knex.fn.now() });
  if (updated) {
    await endPortalSessionsOfApp(knex, appId);
    return 'revoked';
  }
  const exists = await knex('partner_apps').where({ app_id: appId }).first('app_id');
  return exists ? 'already-revoked' : 'unknown';
}

/** Replaces an active app's scopes; false when no active app has that id. */
export async function setAppScopes(knex: Knex, appId: string, scopes: readonly AppScope[]): Promise<boolean> {
  const updated = await knex('partner_apps')
    .where({ app_id: appId })
    .whereNull('revoked_at')
    .update({ scopes: [...scopes] });
  return updated > 0;
}
