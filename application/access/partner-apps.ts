import type { Knex } from 'knex';
import { verifyAppKey } from '../../lib/app-keys';
import type { AppScope } from '../../lib/vocabulary';
import { findActiveApp } from '../../store/access/partner-apps';
import type { OperatorContext } from './audit';

/** A partner app whose key was checked: who it is, what it may do and whose webhooks it sees. */
export interface PartnerApp {
  readonly appId: string;
  readonly name: string;
  readonly scopes: readonly AppScope[];
  readonly companyIds: readonly string[];
}

/**
 * The app `appId` when `appKey` is its key and it is not revoked, else undefined: an unknown app and a wrong key
 * are the same answer. The key is compared in constant time against its salted hash.
 */
export async function authenticateApp(knex: Knex, appId: string, appKey: string): Promise<PartnerApp | undefined> {
  const row = await findActiveApp(knex, appId);
  if (!row || !verifyAppKey(appKey, { salt: row.key_salt, hash: row.key_hash })) return undefined;
  return { appId: row.app_id, name: row.name, scopes: row.scopes, companyIds: row.company_ids };
}

/** The audit trail's actor of an app's change: `app:<app_id>`, never its name or key. */
export const appActor = (appId: string) => `app:${appId}`;

/** Who makes a partner's change, for the audit trail and Temporal's identity. */
export const partnerOperator = (app: Pick<PartnerApp, 'appId'>, requestId?: string): OperatorContext => ({
  actor: appActor(app.appId),
  requestId,
});
