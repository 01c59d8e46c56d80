import type { IncomingHttpHeaders } from 'node:http';
import { request } from 'undici';
import type { Knex } from '../../db/database';
import { hashAppKey } from '../../lib/app-keys';
import type { AppScope } from '../../lib/vocabulary';
import { startTestApi, type TestApi } from '../support/api';

export type ListingApi = TestApi;

/** A fresh database and the real API on a free loopback port, configured from `env`. */
export const startListingApi = (env: NodeJS.ProcessEnv = {}): Promise<ListingApi> => startTestApi(env);

export interface Reply {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly text: string;
  /** The parsed JSON body (undefined when empty). */
  readonly body: any;
}

/** One HTTP request with exactly these headers (undici lets tests set Host and X-Forwarded-*). */
export async function call(
  url: string,
  { method = 'GET', headers = {} }: { method?: string; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const res = await request(url, { method, headers });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text, body: text ? JSON.parse(text) : undefined };
}

export interface TestApp {
  readonly appId: string;
  readonly key: string;
}

/** Inserts an app granted `companies`, its key stored hashed as the service stores it. */
export async function insertApp(
  knex: Knex,
  app: TestApp,
  companies: string[],
  { revoked = false, scopes = ['listings'] }: { revoked?: boolean; scopes?: readonly AppScope[] } = {},
): Promise<void> {
  const { salt, hash } = hashAppKey(app.key);
  await knex('partner_apps').insert({
    app_id: app.appId,
    name: `${app.appId} name`,
    key_salt: salt,
    key_hash: hash,
    revoked_at: revoked ? new Date() : null,
    scopes: [...scopes],
  });
  if (companies.length)
    await knex('partner_app_companies').insert(companies.map((company_id) => ({ app_id: app.appId, company_id })));
}

export const appHeaders = (app: TestApp): Record<string, string> => ({ 'X-App-Id': app.appId, 'X-App-Key': app.key });

/** The user as the API lists it, built from its id alone, so tests can state exact expected bodies. */
export function expectedUser(id: number, role: string) {
  const email = `user${id}@example.test`;
  return {
    id,
    first_name: `First${id}`,
    last_name: `Last${id}`,
    email_primary: email,
    emails: id % 2 === 0 ? [email, `alt${id}@example.org`] : [email],
    is_agency_user: id % 5 === 0,
    role,
  };
}

export async function insertUsers(knex: Knex, ids: number[]): Promise<void> {
  const rows = ids.map((id) => {
    const { role: _role, ...user } = expectedUser(id, '');
    return user;
  });
  for (let i = 0; i < rows.length; i += 500) await knex('users').insert(rows.slice(i, i + 500));
}

export async function insertCompany(
  knex: Knex,
  id: string,
  members: Array<[userId: number, role: string]> = [],
): Promise<void> {
  await knex('companies').insert({ id, name: `${id} Inc.` });
  for (let i = 0; i < members.length; i += 500) {
    await knex('company_users').insert(
      members.slice(i, i + 500).map(([user_id, role]) => ({ company_id: id, user_id, role })),
    );
  }
}

export async function insertJob(
  knex: Knex,
  id: string,
  companyId: string,
  members: Array<[userId: number, role: string]> = [],
): Promise<void> {
  await knex('jobs').insert({ id, company_id: companyId, title: `${id} title` });
  if (members.length) await knex('job_users').insert(members.map(([user_id, role]) => ({ job_id: id, user_id, role })));
}

export const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
