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
export async function startTestApi(env: NodeJS.ProcessEnv = {}, seed?: (knex: Knex) => Promise<void>): Promise<TestApi> {
  const db = await createTestDatabase();
  await seed?.(db.knex);
  const api = await startApiServer({ config: loadConfig(env), knex: db.knex, logger: createLogger('silent') }, 0, '127.0.0.1');
  return {
    db,
    api,
    async close() {
      await api.close();
      await db.drop();
    },
  };
}

/** POST /internal/v1/webhooks with `token`, as an upstream system sends a webhook. */
export const postWebhook = (apiUrl: string, token: string | undefined, event: unknown) =>
  fetch(`${apiUrl}/internal/v1/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(event),
  });

/** A call of the internal API with `token` (a JSON body when given): its status and its JSON answer. */
export async function internalCall(url: string, token: string, method: 'GET' | 'POST' = 'GET', body?: unknown) {
  const json = body !== undefined && { 'content-type': 'application/json' };
  const response = await fetch(url, { method, headers: { authorization: `Bearer ${token}`, ...json }, body: json ? JSON.stringify(body) : undefined });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}
