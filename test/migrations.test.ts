import assert from 'node:assert/strict';
import { migrateLatest, migrateRollbackAll, pendingMigrations } from '../db/migrate';
import { migrations } from '../db/migrations';
import { createEmptyDatabase, type TestDatabase } from './support/database';

const tablesOf = async (db: TestDatabase) =>
  (
    await db.knex.raw<{ rows: { tablename: string }[] }>(
      "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename NOT LIKE 'knex_%' ORDER BY 1",
    )
  ).rows.map((r) => r.tablename);

describe('migrations', () => {
  let db: TestDatabase;
  before(async () => {
    db = await createEmptyDatabase();
  });
  after(async () => db.drop());

  it('apply every migration up, then roll all of them back down, then up again', async () => {
    assert.deepEqual(await pendingMigrations(db.knex), migrations.map(([name]) => name));
    assert.deepEqual(await migrateLatest(db.knex), migrations.map(([name]) => name));
    assert.deepEqual(await pendingMigrations(db.knex), []);
    const tables = await tablesOf(db);
    for (const table of ['companies', 'jobs', 'users', 'company_users', 'job_users', 'scim_groups',
      'scim_group_members', 'partner_apps', 'partner_app_companies', 'webhook_events', 'webhook_attempts']) {
      assert.ok(tables.includes(table), `missing table ${table}`);
    }
    assert.deepEqual(await migrateLatest(db.knex), [], 'a second run applies nothing');

    await migrateRollbackAll(db.knex);
    assert.deepEqual(await tablesOf(db), []);
    assert.deepEqual(await migrateLatest(db.knex), migrations.map(([name]) => name));
  });
});
