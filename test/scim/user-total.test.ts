import assert from 'node:assert/strict';
import { importDirectory } from '../../directory/import-directory';
import { scimGet, startScimApi, type ScimApi } from './support';

const user = (id: number) => ({
  id,
  first_name: `First${id}`,
  last_name: `Last${id}`,
  email_primary: `u${id}@example.test`,
});

describe('SCIM Users unfiltered totalResults (trigger-maintained counter)', () => {
  let scim: ScimApi;
  beforeEach(async () => {
    scim = await startScimApi({}, async () => {});
  });
  afterEach(async () => scim.close());

  /** totalResults of a one-item page, which the page alone cannot prove, next to a real count. */
  async function totals() {
    const reply = await scimGet(scim.base, '/Users', [
      ['count', '1'],
      ['excludedAttributes', 'groups'],
    ]);
    assert.equal(reply.status, 200);
    const { rows } = await scim.db.knex.raw('SELECT count(*)::int AS n FROM users');
    return { reported: reply.body.totalResults as number, actual: rows[0].n as number };
  }

  it('stays exact through imports, re-imports, --replace deletions and TRUNCATE', async () => {
    assert.deepEqual(await totals(), { reported: 0, actual: 0 });
    await importDirectory(scim.db.knex, { users: [1, 2, 3, 4].map(user) });
    assert.deepEqual(await totals(), { reported: 4, actual: 4 });
    await importDirectory(scim.db.knex, { users: [1, 2, 3, 4].map((id) => ({ ...user(id), first_name: 'Changed' })) });
    assert.deepEqual(await totals(), { reported: 4, actual: 4 }, 're-import updates, inserts nothing');
    await importDirectory(scim.db.knex, { users: [3, 4, 5, 6, 7].map(user) }, { replace: true });
    assert.deepEqual(await totals(), { reported: 5, actual: 5 }, '--replace deleted 2 and added 3');
    await scim.db.knex.raw('TRUNCATE users CASCADE');
    assert.deepEqual(await totals(), { reported: 0, actual: 0 });
  });

  it('reads the counter row, not a count of the table; a filtered total still counts', async () => {
    await importDirectory(scim.db.knex, { users: [1, 2, 3].map(user) });
    await scim.db.knex.raw('UPDATE scim_user_total SET total = 42');
    assert.deepEqual(await totals(), { reported: 42, actual: 3 });
    const filtered = await scimGet(scim.base, '/Users', [
      ['filter', 'userName sw "u"'],
      ['count', '1'],
    ]);
    assert.equal(filtered.body.totalResults, 3);
  });
});
