import { APP_SCOPES, type AppScope } from '../../lib/vocabulary';
import { appHeaders, call, insertApp, type Reply, type TestApp } from '../listings/support';
import type { Knex } from '../../db/database';

export { appHeaders, call, insertApp, type Reply, type TestApp };

/** Every scope but `left`: an app that may do everything except what a test takes away. */
export const allScopesBut = (left: AppScope): AppScope[] => APP_SCOPES.filter((scope) => scope !== left);

/** An app named `appId` (its key derived from it) with `scopes`, granted `companies`. */
export async function partnerApp(
  knex: Knex,
  appId: string,
  companies: string[],
  scopes: readonly AppScope[] = APP_SCOPES,
): Promise<TestApp & { headers: Record<string, string> }> {
  const app = { appId, key: `${appId}-key-0123456789abcdef` };
  await insertApp(knex, app, companies, { scopes });
  return { ...app, headers: appHeaders(app) };
}

/** A JSON request to the partner API at `base` as `headers`' app. */
export function partnerCall(
  base: string,
  headers: Record<string, string>,
  method: string,
  path: string,
  body?: unknown,
): Promise<Reply> {
  return callWithBody(`${base}/partner/v1${path}`, method, headers, body);
}

async function callWithBody(
  url: string,
  method: string,
  headers: Record<string, string>,
  body: unknown,
): Promise<Reply> {
  if (body === undefined) return call(url, { method, headers });
  const res = await fetch(url, {
    method,
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return {
    status: res.status,
    headers: Object.fromEntries(res.headers),
    text,
    body: text ? JSON.parse(text) : undefined,
  };
}
