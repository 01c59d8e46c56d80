import assert from 'node:assert/strict';
import pg from 'pg';
import { membersQuery } from '../../api/listings/members-query';
import { runSql } from '../../db/sql';
import { createPartnerApp, revokePartnerApp } from '../../cli/apps-store';
import type { Knex } from '../../db/database';
import * as listingCounts from '../../db/migrations/009_listing_counts';
import { importDirectory } from '../../directory/import-directory';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { range } from './support';

interface Drift {
  readonly listing: string;
  readonly kept: number | null;
  readonly counted: number;
}

/** Every company and job: the kept counter next to count(*) of the very query the listing pages through. */
async function drifts(knex: Knex): Promise<Drift[]> {
  const found: Drift[] = [];
  const companies = await knex('companies')
    .leftJoin('company_listing_counts as c', 'c.company_id', 'companies.id')
    .select('companies.id', 'c.total')
    .orderBy('companies.id');
  for (const { id, total } of companies) {
    const members = membersQuery({ kind: 'company', companyId: id });
    const [{ n }] = await runSql<{ n: number }>(knex, {
      sql: `SELECT count(*)::int AS n FROM (${members.sql}) m`,
      bindings: members.bindings,
    });
    if (total !== n) found.push({ listing: `company ${id}`, kept: total, counted: n });
  }
  const jobs = await knex('jobs')
    .leftJoin('job_listing_counts as c', 'c.job_id', 'jobs.id')
    .select('jobs.id', 'jobs.company_id', 'c.total')
    .orderBy('jobs.id');
  for (const { id, company_id, total } of jobs) {
    const members = membersQuery({ kind: 'job', jobId: id, companyId: company_id });
    const [{ n }] = await runSql<{ n: number }>(knex, {
      sql: `SELECT count(*)::int AS n FROM (${members.sql}) m`,
      bindings: members.bindings,
    });
    if (total !== n) found.push({ listing: `job ${id}`, kept: total, counted: n });
  }
  return found;
}

async function assertExact(knex: Knex, after: string): Promise<void> {
  assert.deepEqual(await drifts(knex), [], `counters drifted after ${after}`);
  // No counter outlives its company or job (they cascade).
  const { rows } =
    await knex.raw(`SELECT (SELECT count(*) FROM company_listing_counts)::int - (SELECT count(*) FROM companies)::int AS c,
    (SELECT count(*) FROM job_listing_counts)::int - (SELECT count(*) FROM jobs)::int AS j`);
  assert.deepEqual(rows[0], { c: 0, j: 0 }, `orphan or missing counters after ${after}`);
}

const user = (id: number) => ({ id, first_name: `F${id}`, last_name: `L${id}`, email_primary: `u${id}@example.test` });

/** acme (users 1-30; 1-3 admins/owners), globex (31-40; 31 admin); three jobs, job users overlapping the admins. */
const snapshot = () => ({
  companies: [
    { id: 'acme', name: 'Acme' },
    { id: 'globex', name: 'Globex' },
    { id: 'empty', name: 'Empty' },
  ],
  users: range(1, 50).map(user),
  jobs: [
    { id: 'acme-1', company_id: 'acme', title: 'One' },
    { id: 'acme-2', company_id: 'acme', title: 'Two' },
    { id: 'globex-1', company_id: 'globex', title: 'Three' },
  ],
  company_users: [
    ...range(1, 30).map((id) => ({
      company_id: 'acme',
      user_id: id,
      role: id === 1 ? 'owner' : id <= 3 ? 'admin' : 'member',
    })),
    ...range(31, 40).map((id) => ({ company_id: 'globex', user_id: id, role: id === 31 ? 'admin' : 'manager' })),
  ],
  job_users: [
    // users 2 and 3 are company admins too: listed once.
    ...range(2, 10).map((id) => ({ job_id: 'acme-1', user_id: id, role: 'collaborator' })),
    { job_id: 'acme-2', user_id: 41, role: 'viewer' },
    ...range(31, 35).map((id) => ({ job_id: 'globex-1', user_id: id, role: 'job_owner' })),
  ],
});

describe('listing counts (trigger-maintained, migration 009)', () => {
  let db: TestDatabase;
  let knex: Knex;
  beforeEach(async () => {
    db = await createTestDatabase();
    knex = db.knex;
    await importDirectory(knex, snapshot());
  });
  afterEach(async () => db.drop());

  const kept = async (table: 'company_listing_counts' | 'job_listing_counts', id: string) =>
    Number(
      (
        await knex(table)
          .where(table === 'company_listing_counts' ? { company_id: id } : { job_id: id })
          .first('total')
      )?.total,
    );

  it('is exact after an import, with a user in both job roles and admins counted once', async () => {
    await assertExact(knex, 'the import');
    assert.equal(await kept('company_listing_counts', 'acme'), 30);
    assert.equal(await kept('company_listing_counts', 'empty'), 0);
    assert.equal(await kept('job_listing_counts', 'acme-1'), 10, 'admins 1-3 ∪ job users 2-10');
    assert.equal(await kept('job_listing_counts', 'acme-2'), 4);
  });

  it('stays exact through re-imports with role changes and --replace imports', async () => {
    const changed = snapshot();
    changed.company_users[5].role = 'admin'; // user 6 promoted: every acme job gains or keeps them
    changed.company_users[1].role = 'member'; // user 2 demoted, still a job user of acme-1
    await importDirectory(knex, changed);
    await assertExact(knex, 'a re-import with promotions and demotions');

    const smaller = snapshot();
    smaller.company_users = smaller.company_users.filter(
      (m) => m.user_id % 4 !== 0 && m.user_id !== 1 && m.user_id !== 33,
    );
    smaller.job_users = smaller.job_users.filter((m) => m.user_id !== 5 && m.user_id !== 33 && m.job_id !== 'acme-2');
    smaller.jobs = smaller.jobs.filter((j) => j.id !== 'acme-2');
    smaller.users = smaller.users.filter((u) => u.id !== 33);
    smaller.companies = smaller.companies.filter((c) => c.id !== 'empty');
    await importDirectory(knex, smaller, { replace: true });
    await assertExact(knex, 'a --replace import');
    assert.equal(await knex('jobs').where({ id: 'acme-2' }).first(), undefined);
  });

  it('stays exact through single-row writes, promotions, demotions, moves, cascades and TRUNCATE', async () => {
    const steps: Array<[string, string]> = [
      ['adding a member', `INSERT INTO company_users VALUES ('acme', 45, 'member')`],
      ['adding a job user who is a company admin', `INSERT INTO job_users VALUES ('acme-2', 1, 'viewer')`],
      [
        'promoting a job user to admin',
        `UPDATE company_users SET role = 'admin' WHERE company_id = 'acme' AND user_id = 9`,
      ],
      [
        'demoting an admin who has no job role',
        `UPDATE company_users SET role = 'manager' WHERE company_id = 'acme' AND user_id = 3`,
      ],
      [
        'demoting an owner who has a job role',
        `UPDATE company_users SET role = 'member' WHERE company_id = 'acme' AND user_id = 1`,
      ],
      ['a role change that changes nothing', `UPDATE company_users SET role = role`],
      [
        'moving memberships between companies',
        `UPDATE company_users SET company_id = 'globex' WHERE company_id = 'acme' AND user_id IN (2, 20)`,
      ],
      ['a job role change', `UPDATE job_users SET role = 'viewer' WHERE job_id = 'acme-1'`],
      [
        'moving job users to another job',
        `UPDATE job_users SET job_id = 'acme-2' WHERE job_id = 'acme-1' AND user_id IN (4, 5)`,
      ],
      ['removing a job user', `DELETE FROM job_users WHERE job_id = 'acme-1' AND user_id = 6`],
      ['deleting an admin who has job roles (cascade into both tables)', `DELETE FROM users WHERE id = 9`],
      ['deleting a member', `DELETE FROM company_users WHERE company_id = 'acme' AND user_id = 25`],
      ['moving a job to another company', `UPDATE jobs SET company_id = 'globex' WHERE id = 'acme-2'`],
      [
        'adding a job to a company with admins',
        `INSERT INTO jobs (id, company_id, title) VALUES ('globex-2', 'globex', 'New')`,
      ],
      ['deleting a job', `DELETE FROM jobs WHERE id = 'acme-1'`],
      ['bulk admin promotion', `UPDATE company_users SET role = 'owner' WHERE user_id % 3 = 0`],
      ['deleting a company (cascade)', `DELETE FROM companies WHERE id = 'acme'`],
      ['TRUNCATE job_users', 'TRUNCATE job_users'],
      ['TRUNCATE company_users', 'TRUNCATE company_users'],
    ];
    for (const [what, sql] of steps) {
      await knex.raw(sql);
      await assertExact(knex, what);
    }
  });

  it('is unaffected by app creation and revocation', async () => {
    const before = await knex('company_listing_counts').orderBy('company_id');
    const { appId } = await createPartnerApp(knex, 'Partner', ['acme', 'globex']);
    assert.equal(await revokePartnerApp(knex, appId), 'revoked');
    assert.deepEqual(await knex('company_listing_counts').orderBy('company_id'), before);
    await assertExact(knex, 'a revocation');
  });

  it('stays exact under 8 concurrent writers on the same company and jobs', async function () {
    this.timeout(60_000);
    const clients = await Promise.all(
      range(1, 8).map(async () => {
        const client = new pg.Client({ connectionString: db.url });
        await client.connect();
        return client;
      }),
    );
    // Writers touch the same few users so their statements collide on the same rows and counters.
    const ops = [
      (u: number) => `INSERT INTO company_users VALUES ('acme', ${u}, 'member') ON CONFLICT DO NOTHING`,
      (u: number) => `DELETE FROM company_users WHERE company_id = 'acme' AND user_id = ${u}`,
      (u: number) => `UPDATE company_users SET role = 'admin' WHERE company_id = 'acme' AND user_id = ${u}`,
      (u: number) => `UPDATE company_users SET role = 'member' WHERE company_id = 'acme' AND user_id = ${u}`,
      (u: number) => `INSERT INTO job_users VALUES ('acme-${1 + (u % 2)}', ${u}, 'viewer') ON CONFLICT DO NOTHING`,
      (u: number) => `DELETE FROM job_users WHERE job_id = 'acme-${1 + (u % 2)}' AND user_id = ${u}`,
      (u: number) =>
        `INSERT INTO jobs (id, company_id, title) VALUES ('acme-n${u}', 'acme', 'n') ON CONFLICT DO NOTHING`,
    ];
    let seed = 7;
    const random = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    let committed = 0;
    let retried = 0;
    try {
      await Promise.all(
        clients.map(async (client, worker) => {
          const isolation = worker % 2 === 0 ? 'READ COMMITTED' : 'REPEATABLE READ';
          for (let i = 0; i < 25; i++) {
            const statements = range(1, 1 + random(2)).map(() => ops[random(ops.length)](1 + random(12)));
            for (;;) {
              try {
                await client.query(`BEGIN ISOLATION LEVEL ${isolation}`);
                for (const sql of statements) await client.query(sql);
                await client.query('COMMIT');
                committed++;
                break;
              } catch (error) {
                await client.query('ROLLBACK');
                // Deadlocks and serialisation failures are the database refusing a stale count: retry.
                if (!['40P01', '40001'].includes((error as { code?: string }).code ?? '')) throw error;
                retried++;
              }
            }
          }
        }),
      );
    } finally {
      await Promise.all(clients.map((client) => client.end()));
    }
    assert.equal(committed, 200);
    await assertExact(knex, `${committed} concurrent transactions (${retried} retried)`);
  });

  it('makes a job recount wait for a concurrent admin change in the same company', async () => {
    const [first, second] = [new pg.Client({ connectionString: db.url }), new pg.Client({ connectionString: db.url })];
    await Promise.all([first.connect(), second.connect()]);
    try {
      // User 8 is a job user of acme-1. Promoted (uncommitted), then removed from the job by another
      // transaction: the job still lists them as an admin, which only a recount after the commit can see.
      await first.query('BEGIN');
      await first.query(`UPDATE company_users SET role = 'admin' WHERE company_id = 'acme' AND user_id = 8`);
      const removal = second.query(`DELETE FROM job_users WHERE job_id = 'acme-1' AND user_id = 8`);
      await new Promise((resolve) => setTimeout(resolve, 200));
      await first.query('COMMIT');
      await removal;
    } finally {
      await Promise.all([first.end(), second.end()]);
    }
    await assertExact(knex, 'a job user removed while their promotion was uncommitted');
  });

  it('migration 009: down drops every table, trigger and function; up backfills exact counts', async () => {
    const leftovers = async () =>
      (
        await knex.raw(`
      SELECT relname AS name FROM pg_class WHERE relname LIKE '%listing_count%'
      UNION ALL SELECT tgname FROM pg_trigger WHERE tgname LIKE '%listing%'
      UNION ALL SELECT proname FROM pg_proc WHERE proname LIKE '%listing%'`)
      ).rows;
    await listingCounts.down(knex);
    assert.deepEqual(await leftovers(), []);
    await knex.raw(`UPDATE company_users SET role = 'owner' WHERE user_id = 5`); // a write the triggers do not see
    await knex.transaction((trx) => listingCounts.up(trx));
    await assertExact(knex, 'the backfill');
    assert.equal(await kept('job_listing_counts', 'acme-2'), 5);
  });

  it('detects a corrupted counter (the comparison can fail)', async () => {
    await knex.raw(`UPDATE company_listing_counts SET total = total + 1 WHERE company_id = 'globex'`);
    await knex.raw(`UPDATE job_listing_counts SET total = total - 1 WHERE job_id = 'acme-1'`);
    assert.deepEqual(await drifts(knex), [
      { listing: 'company globex', kept: 11, counted: 10 },
      { listing: 'job acme-1', kept: 9, counted: 10 },
    ]);
    await assert.rejects(assertExact(knex, 'corruption'), assert.AssertionError);
  });
});
