import assert from 'node:assert/strict';
import { planList } from '../../api/scim/engine/handlers';
import { userResource } from '../../api/scim/users/resource';
import { migrateLatest, migrateRollbackAll, migrateUp, pendingMigrations } from '../../db/migrate';
import { migrations } from '../../db/migrations';
import { createKnex } from '../../db/database';
import { runSql, sql } from '../../db/sql';
import * as vocabulary from '../../lib/vocabulary';
import { type TestDatabase, useTestDatabase } from '../support/database';
import { eventually } from '../support/eventually';

const tablesOf = async (db: TestDatabase) =>
  (
    await db.knex.raw<{ rows: { tablename: string }[] }>(
      "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename NOT LIKE 'knex_%' ORDER BY 1",
    )
  ).rows.map((r) => r.tablename);

describe('migrations', () => {
  const db = useTestDatabase({ empty: true });

  it('apply every migration up, then roll all of them back down, then up again', async () => {
    assert.deepEqual(
      await pendingMigrations(db.knex),
      migrations.map(([name]) => name),
    );
    assert.deepEqual(
      await migrateLatest(db.knex),
      migrations.map(([name]) => name),
    );
    assert.deepEqual(await pendingMigrations(db.knex), []);
    const tables = await tablesOf(db);
    for (const table of [
      'companies',
      'jobs',
      'users',
      'company_users',
      'job_users',
      'scim_groups',
      'scim_group_members',
      'partner_apps',
      'partner_app_companies',
      'webhook_events',
      'webhook_attempts',
    ]) {
      assert.ok(tables.includes(table), `missing table ${table}`);
    }
    assert.deepEqual(await migrateLatest(db.knex), [], 'a second run applies nothing');

    await migrateRollbackAll(db.knex);
    assert.deepEqual(await tablesOf(db), []);
    assert.deepEqual(
      await migrateLatest(db.knex),
      migrations.map(([name]) => name),
    );
  });

  it('CHECK constraints allow exactly the values of lib/vocabulary.ts, so a new value cannot skip its migration', async () => {
    await migrateLatest(db.knex);
    const allowed = async (table: string, column: string) => {
      const { rows } = await db.knex.raw<{ rows: { definition: string }[] }>(
        `SELECT pg_get_constraintdef(c.oid) AS definition FROM pg_constraint c
           JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)
          WHERE c.contype = 'c' AND c.conrelid = ?::regclass AND a.attname = ? AND cardinality(c.conkey) = 1`,
        [table, column],
      );
      assert.equal(rows.length, 1, `one CHECK on ${table}.${column}`);
      return [...rows[0].definition.matchAll(/'([^']*)'::text/g)].map((m) => m[1]).sort();
    };
    const sorted = (values: readonly string[]) => [...values].sort();
    assert.deepEqual(await allowed('company_users', 'role'), sorted(vocabulary.COMPANY_ROLES));
    assert.deepEqual(await allowed('job_users', 'role'), sorted(vocabulary.JOB_ROLES));
    assert.deepEqual(await allowed('webhook_events', 'event_type'), sorted(vocabulary.EVENT_TYPES));
    assert.deepEqual(await allowed('webhook_events', 'action'), sorted(vocabulary.EVENT_ACTIONS));
    assert.deepEqual(await allowed('webhook_events', 'status'), sorted(vocabulary.WEBHOOK_STATUSES));
    assert.deepEqual(await allowed('webhook_attempts', 'error_class'), sorted(vocabulary.ATTEMPT_ERROR_CLASSES));
    assert.deepEqual(await allowed('webhook_attempts', 'trigger'), sorted(vocabulary.ATTEMPT_TRIGGERS));
    assert.deepEqual(await allowed('webhook_attempts', 'expired_links'), sorted(vocabulary.SIGNED_LINK_KINDS));
    assert.deepEqual(await allowed('api_tokens', 'scopes'), sorted(vocabulary.TOKEN_SCOPES));
    assert.deepEqual(await allowed('audit_events', 'outcome'), sorted(vocabulary.AUDIT_OUTCOMES));
  });

  it('an upgrade over existing users plans userName eq on its folded index at once, without waiting for autovacuum', async () => {
    await migrateRollbackAll(db.knex);
    for (const [name] of migrations.slice(
      0,
      migrations.findIndex(([next]) => next === '010_scim_user_indexes'),
    )) {
      assert.deepEqual(await migrateUp(db.knex), [name]);
    }
    // A directory as it was before 010, analyzed then (as autovacuum would have): no statistics for 010's expressions.
    await db.knex.raw(`
      INSERT INTO users (id, first_name, last_name, email_primary, emails)
      SELECT n, 'First' || n, 'Last' || n, 'user' || n || '@example.test', ARRAY['user' || n || '@example.test']
      FROM generate_series(1, 50000) AS n`);
    await db.knex.raw('ANALYZE users');
    await migrateLatest(db.knex);

    // The very statement a `GET /Users?filter=userName eq …` page runs.
    const { request } = planList(
      userResource,
      { filter: 'userName eq "User4242@Example.test"' },
      'http://127.0.0.1/scim/v2',
    );
    const page = userResource.queries.page(request.where, request.order, request.count, 0, request.include);
    const rows = await runSql<{ 'QUERY PLAN': string }>(db.knex, sql`EXPLAIN ${page}`);
    const plan = rows.map((row) => row['QUERY PLAN']).join('\n');
    // Estimated from statistics: one row, not the planner's default guess of 0.5% of the table.
    assert.match(plan, /Index Scan (using|on) users_scim_user_name_folded_idx[^\n]* rows=1 /, plan);
    const { rows: analyzed } = await db.knex.raw<{ rows: { tablename: string }[] }>(
      "SELECT DISTINCT tablename FROM pg_stats WHERE tablename LIKE 'users_scim_%' ORDER BY 1",
    );
    assert.deepEqual(
      analyzed.map((row) => row.tablename),
      ['users_scim_emails_folded_idx', 'users_scim_user_name_folded_idx'],
    );
  });
  it('023 builds its indexes CONCURRENTLY: writes go on while a build waits, and a build cut off is built again by the next run', async function () {
    this.timeout(60_000);
    const INDEXES = [
      'audit_events_action',
      'webhook_attempts_resting_key',
      'webhook_events_company_status',
      'webhook_events_redeliveries',
      'webhook_events_resting_key',
    ];
    await migrateRollbackAll(db.knex);
    for (let k = migrations.findIndex(([next]) => next === '023_flat_year_indexes'); k > 0; k--)
      await migrateUp(db.knex);
    const [holder, writer] = [createKnex(db.url, { min: 0, max: 1 }), createKnex(db.url, { min: 0, max: 1 })];
    const insert = (knex: typeof writer, eventId: string) =>
      knex.raw(
        `INSERT INTO webhook_events (id, event_id, event_type, action, body) VALUES (gen_random_uuid(), ?, 'company', 'signup', '{}')`,
        [eventId],
      );
    const building = () =>
      runSql<{ pid: number; query: string; waiting: boolean }>(
        db.knex,
        sql`SELECT pid, query, wait_event_type = 'Lock' AS waiting FROM pg_stat_activity WHERE datname = current_database() AND query ~ '^(CREATE|DROP) INDEX CONCURRENTLY'`,
      );
    const valid = async () =>
      (
        await runSql<{ name: string; valid: boolean }>(
          db.knex,
          sql`SELECT c.relname AS name, i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = ANY(${INDEXES}::text[]) ORDER BY 1`,
        )
      ).map((row) => `${row.name} ${row.valid ? 'valid' : 'INVALID'}`);
    try {
      // A writer's transaction left open on webhook_events: a build on that table waits for it to end.
      let open = await holder.transaction();
      await insert(open, 'open-1');
      const cutOff = migrateUp(db.knex).then(
        () => 'applied',
        (error: Error) => error.message,
      );
      await eventually('a build waiting for the open transaction', async () =>
        (await building()).some((b) => b.waiting),
      );
      const [waitingBuild] = await building();
      assert.match(waitingBuild.query, /^CREATE INDEX CONCURRENTLY webhook_events_/);
      // Meanwhile another writer goes on: a plain CREATE INDEX would hold it until the build ended.
      const started = Date.now();
      await writer.transaction(async (trx) => {
        await trx.raw(`SET LOCAL lock_timeout = '5s'`);
        await insert(trx, 'during-build');
      });
      assert.ok(Date.now() - started < 2_000, `an INSERT during the build took ${Date.now() - started} ms`);
      // The build is cut off (a cancelled statement, as a lost connection or a crash would): an INVALID index is left.
      await runSql(db.knex, sql`SELECT pg_cancel_backend(${waitingBuild.pid})`);
      assert.match(await cutOff, /canceling statement/);
      await open.rollback();
      assert.ok(
        (await valid()).some((line) => line.endsWith('INVALID')),
        (await valid()).join(', '),
      );
      // The next run drops it and builds it again, while a transaction is open once more.
      open = await holder.transaction();
      await insert(open, 'open-2');
      const again = migrateLatest(db.knex);
      await eventually('the second run waiting', async () => (await building()).some((b) => b.waiting));
      assert.match(
        (await building())[0].query,
        /^DROP INDEX CONCURRENTLY IF EXISTS webhook_events_/,
        'it drops the INVALID index first',
      );
      await open.commit();
      // 023 first; later migrations follow it.
      assert.equal((await again)[0], '023_flat_year_indexes');
      assert.deepEqual(
        await valid(),
        INDEXES.map((name) => `${name} valid`),
      );
    } finally {
      await Promise.all([holder.destroy(), writer.destroy()]);
    }
  });
});
