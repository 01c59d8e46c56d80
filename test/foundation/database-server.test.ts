import assert from 'node:assert/strict';
import { assertSupportedServer, MIN_SERVER_VERSION, UnsupportedServerError } from '../../db/database';
import { describeError } from '../../lib/describe-error';
import { useTestDatabase } from '../support/database';

describe('the PostgreSQL release', () => {
  const db = useTestDatabase();

  it(`accepts the test server (${MIN_SERVER_VERSION} or newer)`, async () => {
    await assertSupportedServer(db.knex);
  });

  it('refuses a release below the minimum with one line naming the version it found', async () => {
    const { rows } = await db.knex.raw("SELECT current_setting('server_version') AS version");
    await assert.rejects(assertSupportedServer(db.knex, 99), (error: unknown) => {
      assert.ok(error instanceof UnsupportedServerError);
      assert.equal(error.message, `PostgreSQL ${rows[0].version} is not supported: the service needs PostgreSQL 99 or newer (DATABASE_URL)`);
      return true;
    });
  });
});

describe('describeError', () => {
  it('never answers with an empty reason or "undefined"', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    assert.equal(describeError(new AggregateError([refused, refused], '')), 'connect ECONNREFUSED 127.0.0.1:1');
    assert.equal(describeError(Object.assign(new Error(''), { code: 'EPIPE' })), 'Error (EPIPE)');
    assert.equal(describeError(undefined), 'undefined value thrown');
    assert.equal(describeError('plain'), 'plain');
  });
});
