import assert from 'node:assert/strict';
import { assertSupportedServer, MIN_SERVER_VERSION } from '../../db/database';
import { useTestDatabase } from '../support/database';
import { DatabaseUnusableError } from '../../lib/errors';

describe('the PostgreSQL release', () => {
  const db = useTestDatabase();

  it(`accepts the test server (${MIN_SERVER_VERSION} or newer)`, async () => {
    await assertSupportedServer(db.knex);
  });

  it('refuses a release below the minimum with one line naming the version it found', async () => {
    const { rows } = await db.knex.raw("SELECT current_setting('server_version') AS version");
    await assert.rejects(assertSupportedServer(db.knex, 99), (error: unknown) => {
      assert.ok(error instanceof DatabaseUnusableError);
      assert.equal(
        error.message,
        `PostgreSQL ${rows[0].version} is not supported: the service needs PostgreSQL 99 or newer (DATABASE_URL)`,
      );
      return true;
    });
  });
});
