import assert from 'node:assert/strict';
import { importDirectory } from '../../directory/import-directory';
import { scimGet, startScimApi, type ScimApi } from './support';

const group = (n: number) => ({
  id: `00000000-0000-4000-b000-${String(n).padStart(12, '0')}`,
  display_name: `Team ${n}`,
});

describe('SCIM unfiltered totalResults (trigger-maintained counter)', () => {
  let scim: ScimApi;
  beforeEach(async () => {
    scim = await startScimApi({}, async () => {});
  });
  afterEach(async () => scim.close());

  /** totalResults of a one-item page, which the page alone cannot prove, next to a real count. */
  async function totals() {
    const reply = await scimGet(scim.base, '/Groups', [
      ['count', '1'],
      ['excludedAttributes', 'members'],
    ]);
    assert.equal(reply.status, 200);
    const { rows } = await scim.db.knex.raw('SELECT count(*)::int AS n FROM scim_groups');
    return { reported: reply.body.totalResults as number, actual: rows[0].n as number };
  }

  it('stays exact through imports, --replace deletions, duplicate inserts and TRUNCATE', async () => {
    assert.deepEqual(await totals(), { reported: 0, actual: 0 });

    await importDirectory(scim.db.knex, { groups: [1, 2, 3, 4].map(group) });
    assert.deepEqual(await totals(), { reported: 4, actual: 4 });

    await importDirectory(scim.db.knex, { groups: [1, 2, 3, 4].map(group) });
    assert.deepEqual(await totals(), { reported: 4, actual: 4 }, 're-import inserts nothing');

    await importDirectory(scim.db.knex, { groups: [3, 4, 5, 6, 7].map(group) }, { replace: true });
    assert.deepEqual(await totals(), { reported: 5, actual: 5 }, '--replace deleted 2 and added 3');

    await scim.db.knex.raw("INSERT INTO scim_groups (id, display_name) VALUES (?, 'dup') ON CONFLICT DO NOTHING", [
      group(3).id,
    ]);
    assert.deepEqual(await totals(), { reported: 5, actual: 5 });

    await scim.db.knex.raw('TRUNCATE scim_groups CASCADE');
    assert.deepEqual(await totals(), { reported: 0, actual: 0 });
  });

  it('reads the counter row, not a count of the table', async () => {
    await importDirectory(scim.db.knex, { groups: [1, 2].map(group) });
    await scim.db.knex.raw('UPDATE scim_group_total SET total = 42');
    assert.deepEqual(await totals(), { reported: 42, actual: 2 });
  });

  it('a filtered total still counts the matching groups', async () => {
    await importDirectory(scim.db.knex, { groups: [1, 2, 3].map(group) });
    const reply = await scimGet(scim.base, '/Groups', [
      ['filter', 'displayName sw "Team"'],
      ['count', '1'],
    ]);
    assert.equal(reply.body.totalResults, 3);
    const none = await scimGet(scim.base, '/Groups', [
      ['filter', 'displayName eq "Team 9"'],
      ['count', '0'],
    ]);
    assert.equal(none.body.totalResults, 0);
  });
});
