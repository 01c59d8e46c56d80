import { request } from 'undici';
import type { Knex } from '../../db/database';
import { hashAppKey } from '../../lib/app-keys';
import { APP_SCOPES } from '../../lib/vocabulary';

/** A partner app `appId` with every scope, granted `companies`, as the admin command writes it: its headers. */
export async function grantApp(knex: Knex, appId: string, companies: readonly string[]) {
  const key = `${appId}-key-0123456789abcdef`;
  const { salt, hash } = hashAppKey(key);
  await knex('companies')
    .insert(companies.map((id) => ({ id, name: id })))
    .onConflict('id')
    .ignore();
  await knex('partner_apps').insert({
    app_id: appId,
    name: appId,
    key_salt: salt,
    key_hash: hash,
    scopes: [...APP_SCOPES],
  });
  await knex('partner_app_companies').insert(companies.map((company_id) => ({ app_id: appId, company_id })));
  return { 'x-app-id': appId, 'x-app-key': key };
}

/** GET `path` of the API at `base` as the app of `headers`: the status, the time to the whole body, the body. */
export async function appGet(base: string, path: string, headers: Record<string, string>) {
  const started = performance.now();
  const res = await request(`${base}${path}`, { headers });
  const text = await res.body.text();
  return { status: res.statusCode, ms: performance.now() - started, text };
}
