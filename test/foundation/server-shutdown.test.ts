import assert from 'node:assert/strict';
import { request, Agent } from 'undici';
import { createKnex } from '../../db/database';
import { loadConfig } from '../../lib/config';
import { createLogger } from '../../lib/logger';
import { startApiServer } from '../../api/server';
import { useTestDatabase } from '../support/database';

describe('API server shutdown', () => {
  const db = useTestDatabase();

  it('lets an in-flight keep-alive request finish, closes its connection, and resolves at once', async () => {
    // A pool of one connection, held by a transaction, keeps /readyz in flight until we let go.
    const knex = createKnex(db.url, { min: 0, max: 1 });
    const agent = new Agent({ keepAliveTimeout: 60_000 });
    const api = await startApiServer({ config: loadConfig({}), knex, logger: createLogger('silent') }, 0, '127.0.0.1');
    try {
      let release!: () => void;
      const held = knex.transaction(
        (trx) =>
          new Promise<void>((resolve) => {
            release = resolve;
            void trx;
          }),
      );
      await new Promise((r) => setTimeout(r, 100));
      const pending = request(`${api.url}/readyz`, { dispatcher: agent });
      await new Promise((r) => setTimeout(r, 200));

      const started = Date.now();
      const closed = api.close();
      release();
      await held;
      const response = await pending;
      assert.equal(response.statusCode, 200);
      assert.equal(response.headers.connection, 'close');
      await response.body.json();
      await closed;
      assert.ok(Date.now() - started < 3000, `close took ${Date.now() - started} ms`);
      assert.equal(api.server.listening, false);
    } finally {
      await agent.close();
      await knex.destroy();
    }
  });
});
