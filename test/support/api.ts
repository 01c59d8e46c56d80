import assert from 'node:assert/strict';
import type { Knex } from '../../db/database';
import { loadConfig } from '../../lib/config';
import { createLogger } from '../../lib/logger';
import { startApiServer, type ApiServer } from '../../api/server';
import { createTestDatabase, type TestDatabase } from './database';

export interface TestApi {
  readonly db: TestDatabase;
  readonly api: ApiServer;
  close(): Promise<void>;
}

/** A fresh database (seeded by `seed`) and the real API on a free loopback port, configured from `env`. */
export async function startTestApi(
  env: NodeJS.ProcessEnv = {},
  seed?: (knex: Knex) => Promise<void>,
): Promise<TestApi> {
  const db = await createTestDatabase();
  await seed?.(db.knex);
  const api = await startApiServer(
    { config: loadConfig(env), knex: db.knex, logger: createLogger('silent') },
    0,
    '127.0.0.1',
  );
  return {
    db,
    api,
    async close() {
      await api.close();
      await db.drop();
    },
  };
}

/** POST /internal/v1/webhooks with `token`, as an upstream system sends a webhook; `headers` are sent as well. */
export const postWebhook = (
  apiUrl: string,
  token: string | undefined,
  event: unknown,
  headers: Record<string, string> = {},
) =>
  fetch(`${apiUrl}/internal/v1/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(event),
  });

/** The internal API's answer to a webhook it took: the webhook's id and its delivery workflow's. */
export interface AcceptedWebhook {
  readonly webhook_id: string;
  readonly workflow_id: string;
}

/**
 * Posts `event` (postWebhook) and asserts the answer's status, 202 (a delivery started) unless `status` says
 * otherwise: the answer's body.
 */
export async function submitWebhook(
  apiUrl: string,
  token: string | undefined,
  event: unknown,
  { status = 202, headers = {} }: { status?: number; headers?: Record<string, string> } = {},
): Promise<AcceptedWebhook> {
  const response = await postWebhook(apiUrl, token, event, headers);
  const text = await response.text();
  assert.equal(response.status, status, text);
  return JSON.parse(text) as AcceptedWebhook;
}

/** A call of the internal API with `token` (a JSON body when given): its status and its JSON answer. */
export async function internalCall(url: string, token: string, method = 'GET', body?: unknown) {
  const json = body !== undefined && { 'content-type': 'application/json' };
  const response = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${token}`, ...json },
    body: json ? JSON.stringify(body) : undefined,
  });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}
