import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { verifyAppKey } from '../../lib/app-keys';
import { demoDirectoryFile } from '../../directory/demo-directory';
import { importDirectory, type SectionSummary } from '../../directory/import-directory';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { DirectoryImportError } from '../../lib/errors';

type Snapshot = Record<string, any>;

const base = (): Snapshot => ({
  companies: [{ id: 'acme', internal_id: 101, name: 'Acme', has_config: true, settings: { a: 1 } }],
  jobs: [
    {
      id: 'acme-eng-1',
      internal_id: 5001,
      company_id: 'acme',
      title: 'Backend Engineer',
      internal_reference: 'ENG-1',
      from_date: '2026-01-01',
      to_date: '2026-03-01',
    },
  ],
  users: [
    {
      id: 1,
      first_name: 'Ada',
      last_name: 'Lovelace',
      email_primary: 'ada@acme.test',
      emails: ['ada@home.test', 'ada@acme.test'],
      is_agency_user: false,
    },
    { id: 2, first_name: 'Grace', last_name: 'Hopper', email_primary: 'grace@acme.test' },
  ],
  company_users: [
    { company_id: 'acme', user_id: 1, role: 'admin' },
    { company_id: 'acme', user_id: 2, role: 'member' },
  ],
  job_users: [{ job_id: 'acme-eng-1', user_id: 2, role: 'collaborator' }],
  groups: [
    {
      id: '8f0e2c3a-5d1b-4b5e-9a57-1c1f3f0b2a10',
      external_id: 'EXT-1',
      display_name: 'Engineering',
      created: '2024-01-01T00:00:00Z',
      last_modified: '2024-02-01T00:00:00Z',
      members: [
        { type: 'User', value: '1' },
        { type: 'Group', value: '4b1d2c3e-6f70-4a8b-9c0d-1e2f3a4b5c6d' },
      ],
    },
    { id: '4b1d2c3e-6f70-4a8b-9c0d-1e2f3a4b5c6d', display_name: 'Platform', members: [{ type: 'User', value: '2' }] },
    { display_name: 'No id', members: [] },
  ],
  apps: [{ app_id: 'partner-demo', app_key: 'a-very-secret-key-123', company_ids: ['acme'] }],
});

/** Everything the import can change, in a stable order, for before/after comparisons. */
async function dump(db: TestDatabase) {
  const q = async (sql: string) => (await db.knex.raw(sql)).rows;
  return {
    companies: await q(
      'SELECT id, internal_id, name, has_config, settings, created_at, updated_at FROM companies ORDER BY id',
    ),
    jobs: await q(
      'SELECT id, company_id, internal_id, internal_reference, title, from_date, to_date, updated_at FROM jobs ORDER BY id',
    ),
    users: await q(
      'SELECT id, first_name, last_name, email_primary, emails, is_agency_user, updated_at FROM users ORDER BY id',
    ),
    company_users: await q('SELECT * FROM company_users ORDER BY company_id, user_id'),
    job_users: await q('SELECT * FROM job_users ORDER BY job_id, user_id'),
    groups: await q('SELECT * FROM scim_groups ORDER BY id'),
    members: await q('SELECT group_id, type, value FROM scim_group_members ORDER BY group_id, type, value'),
    apps: await q('SELECT app_id, name, key_salt, key_hash, revoked_at FROM partner_apps ORDER BY app_id'),
    grants: await q('SELECT * FROM partner_app_companies ORDER BY app_id, company_id'),
  };
}

async function expectProblems(db: TestDatabase, input: unknown, problems: string[], replace = false) {
  const before = await dump(db);
  await assert.rejects(importDirectory(db.knex, input, { replace }), (error: unknown) => {
    assert.ok(error instanceof DirectoryImportError, String(error));
    assert.deepEqual(error.problems, problems);
    return true;
  });
  assert.deepEqual(await dump(db), before, 'an invalid import must write nothing');
}

describe('directory import', () => {
  let db: TestDatabase;
  beforeEach(async () => {
    db = await createTestDatabase();
  });
  afterEach(async () => db.drop());

  it('imports every section, primary e-mail first, app key hashed', async () => {
    const summary = await importDirectory(db.knex, base());
    assert.deepEqual(summary.users, { inserted: 2, updated: 0, unchanged: 0, deleted: 0 });
    const state = await dump(db);
    assert.deepEqual(
      state.users.map((u: any) => u.emails),
      [['ada@acme.test', 'ada@home.test'], ['grace@acme.test']],
    );
    assert.equal(state.jobs[0].from_date, '2026-01-01');
    assert.deepEqual(
      state.members.map((m: any) => [m.type, m.value]),
      [
        ['User', '2'],
        ['Group', '4b1d2c3e-6f70-4a8b-9c0d-1e2f3a4b5c6d'],
        ['User', '1'],
      ],
    );
    assert.equal(state.groups.length, 3);
    const [app] = state.apps;
    assert.ok(!app.key_hash.toString('utf8').includes('a-very-secret-key-123'));
    assert.ok(verifyAppKey('a-very-secret-key-123', { salt: app.key_salt, hash: app.key_hash }));
    assert.ok(!verifyAppKey('a-very-secret-key-124', { salt: app.key_salt, hash: app.key_hash }));
    assert.deepEqual(state.grants, [{ app_id: 'partner-demo', company_id: 'acme' }]);
  });

  it('is idempotent: importing the same file twice leaves the same state, timestamps and hashes included', async () => {
    await importDirectory(db.knex, base());
    const first = await dump(db);
    await importDirectory(db.knex, base());
    assert.deepEqual(await dump(db), first);
  });

  it('updates changed rows and bumps a group version only when it changed', async () => {
    await importDirectory(db.knex, base());
    const next = base();
    next.users[1].last_name = 'Murray Hopper';
    next.company_users[1].role = 'manager';
    next.groups[1].members = [{ type: 'User', value: '1' }];
    await importDirectory(db.knex, next);
    const state = await dump(db);
    assert.equal(state.users[1].last_name, 'Murray Hopper');
    assert.equal(state.company_users[1].role, 'manager');
    const versions = Object.fromEntries(state.groups.map((g: any) => [g.display_name, g.version]));
    assert.deepEqual(versions, { Engineering: 1, Platform: 2, 'No id': 1 });
  });

  it('without --replace keeps rows the file does not mention; with --replace deletes them', async () => {
    await importDirectory(db.knex, base());
    const smaller = {
      users: [base().users[0]],
      company_users: [base().company_users[0]],
    };
    await importDirectory(db.knex, smaller);
    assert.equal((await dump(db)).users.length, 2);
    const summary = await importDirectory(db.knex, smaller, { replace: true });
    assert.deepEqual(summary.users, { inserted: 0, updated: 0, unchanged: 1, deleted: 1 });
    const state = await dump(db);
    assert.deepEqual(
      state.users.map((u: any) => u.id),
      [1],
    );
    assert.deepEqual(
      state.company_users.map((m: any) => m.user_id),
      [1],
    );
    assert.deepEqual(state.job_users, [], 'memberships of deleted users go with them');
    assert.equal(state.companies.length, 1, 'sections absent from the file are left alone');
  });

  it('tells inserted, updated and unchanged rows apart in every section', async () => {
    await importDirectory(db.knex, base());
    const again = await importDirectory(db.knex, base());
    const { durationMs: _ms, ...sections } = again;
    for (const [section, counts] of Object.entries(sections) as Array<[string, SectionSummary]>) {
      assert.deepEqual([counts.inserted, counts.updated, counts.deleted], [0, 0, 0], section);
    }
    const changed = base();
    changed.users[0].first_name = 'Augusta';
    changed.company_users[1].role = 'manager';
    Object.assign(changed.apps[0], { name: 'Renamed' });
    const summary = await importDirectory(db.knex, changed);
    assert.deepEqual(summary.users, { inserted: 0, updated: 1, unchanged: 1, deleted: 0 });
    assert.deepEqual(summary.company_users, { inserted: 0, updated: 1, unchanged: 1, deleted: 0 });
    assert.deepEqual(summary.apps, { inserted: 0, updated: 1, unchanged: 0, deleted: 0 });
    assert.deepEqual(summary.companies, { inserted: 0, updated: 0, unchanged: 1, deleted: 0 });
  });

  it('reports schema, duplicate and reference problems of one file in one run', async () => {
    const input = base();
    input.users[1].email_primary = 'not-an-address';
    input.users.push({ ...base().users[0] });
    input.company_users.push({ company_id: 'nope', user_id: 1, role: 'member' });
    input.job_users.push({ job_id: 'acme-eng-1', user_id: 42, role: 'viewer' });
    await expectProblems(db, input, [
      'users[1].email_primary: not an e-mail address',
      'users[2].id: duplicate of users[0]',
      'company_users[2].company_id: unknown company "nope"',
      'job_users[1].user_id: unknown user 42',
    ]);
  });

  it('stops listing problems at 100 and says how many more there were', async () => {
    const input = {
      users: Array.from({ length: 150 }, (_, i) => ({
        id: i + 1,
        first_name: 'A',
        last_name: 'B',
        email_primary: `bad-${i}`,
      })),
    };
    await assert.rejects(importDirectory(db.knex, input), (error: unknown) => {
      assert.ok(error instanceof DirectoryImportError);
      assert.equal(error.problems.length, 101);
      assert.equal(error.problems[100], '… and 50 more problem(s)');
      return true;
    });
  });

  it('resolves references against the database when the file does not contain them', async () => {
    await importDirectory(db.knex, base());
    await importDirectory(db.knex, { job_users: [{ job_id: 'acme-eng-1', user_id: 1, role: 'viewer' }] });
    assert.equal((await dump(db)).job_users.length, 2);
  });

  it('imports the demo directory shipped in examples/', async () => {
    const demo = JSON.parse(await readFile(demoDirectoryFile(), 'utf8'));
    const summary = await importDirectory(db.knex, demo);
    assert.deepEqual(summary.apps, { inserted: 1, updated: 0, unchanged: 0, deleted: 0 });
  });

  describe('rejects invalid input with JSON paths and writes nothing', () => {
    beforeEach(async () => {
      await importDirectory(db.knex, base());
    });

    const cases: Array<[string, (s: Snapshot) => unknown, string[], boolean?]> = [
      [
        'a malformed e-mail',
        (s) => {
          s.users[1].emails = ['x@y.test', 'not-an-email'];
          return s;
        },
        ['users[1].emails[1]: not an e-mail address'],
      ],
      [
        'an unknown company role',
        (s) => {
          s.company_users[0].role = 'superuser';
          return s;
        },
        ['company_users[0].role: must be one of admin, owner, manager, member'],
      ],
      [
        'an unknown job role',
        (s) => {
          s.job_users[0].role = 'owner';
          return s;
        },
        ['job_users[0].role: must be one of job_owner, collaborator, viewer, job_interviewer'],
      ],
      [
        'a dangling company reference',
        (s) => {
          s.jobs[0].company_id = 'nope';
          return s;
        },
        ['jobs[0].company_id: unknown company "nope"'],
      ],
      [
        'a dangling user in a membership',
        (s) => {
          s.company_users.push({ company_id: 'acme', user_id: 99, role: 'member' });
          return s;
        },
        ['company_users[2].user_id: unknown user 99'],
      ],
      [
        'a dangling group member',
        (s) => {
          s.groups[0].members.push({ type: 'Group', value: '00000000-0000-4000-8000-000000000000' });
          return s;
        },
        ['groups[0].members[2].value: unknown group "00000000-0000-4000-8000-000000000000"'],
      ],
      [
        'a user member that is not a user id',
        (s) => {
          s.groups[0].members.push({ type: 'User', value: 'ada' });
          return s;
        },
        ["groups[0].members[2].value: a User member's value must be a user id"],
      ],
      [
        'duplicate user ids',
        (s) => {
          s.users.push({ ...s.users[0] });
          return s;
        },
        ['users[2].id: duplicate of users[0]'],
      ],
      [
        'duplicate memberships',
        (s) => {
          s.company_users.push({ ...s.company_users[0] });
          return s;
        },
        ['company_users[2].user_id: duplicate of company_users[0]'],
      ],
      [
        'an unknown field',
        (s) => {
          s.users[0].emial = 'x';
          return s;
        },
        ['users[0].emial: unknown field'],
      ],
      [
        'a wrong type',
        (s) => {
          s.users[0].id = '1';
          return s;
        },
        ['users[0].id: must be a positive integer'],
      ],
      [
        'an impossible date',
        (s) => {
          s.jobs[0].to_date = '2026-02-30';
          return s;
        },
        ['jobs[0].to_date: must be a date in the form YYYY-MM-DD'],
      ],
      [
        'a closing date before the publish date',
        (s) => {
          s.jobs[0].to_date = '2025-01-01';
          return s;
        },
        ['jobs[0].to_date: must not be before from_date'],
      ],
      [
        'a short app key',
        (s) => {
          s.apps[0].app_key = 'short';
          return s;
        },
        ['apps[0].app_key: must be at least 16 characters long'],
      ],
      [
        'an app granted an unknown company',
        (s) => {
          s.apps[0].company_ids = ['acme', 'ghost'];
          return s;
        },
        ['apps[0].company_ids[1]: unknown company "ghost"'],
      ],
      [
        'a group date without offset',
        (s) => {
          s.groups[0].created = '2024-01-01 00:00';
          return s;
        },
        ['groups[0].created: must be an ISO 8601 date-time with a UTC offset'],
      ],
      ['a top-level array', () => [], ['(root): Invalid input: expected object, received array']],
      [
        'a group name too long for its index',
        (s) => {
          s.groups[0].display_name = 'n'.repeat(3000);
          return s;
        },
        ['groups[0].display_name: must be at most 500 characters'],
      ],
      [
        'text PostgreSQL cannot store (NUL, lone surrogate)',
        (s) => {
          s.users[0].first_name = 'A\u0000da';
          s.companies[0].settings = { ['k\ud800']: 1 };
          return s;
        },
        [
          'companies[0].settings.k\ud800: text PostgreSQL cannot store: a NUL character (\\u0000) or an unpaired surrogate',
          'users[0].first_name: text PostgreSQL cannot store: a NUL character (\\u0000) or an unpaired surrogate',
        ],
      ],
      [
        'with --replace, a reference to a row the file drops',
        (s) => {
          s.companies = [];
          return { companies: [], jobs: s.jobs };
        },
        ['jobs[0].company_id: unknown company "acme"'],
        true,
      ],
    ];
    for (const [name, mutate, problems, replace] of cases) {
      it(name, async () => expectProblems(db, mutate(base()), problems, replace));
    }

    it('a duplicate caught only by the database (internal_id of another company) rolls everything back', async () => {
      const before = await dump(db);
      await assert.rejects(
        importDirectory(db.knex, {
          users: [{ ...base().users[0], first_name: 'Changed' }],
          companies: [{ id: 'other', internal_id: 101, name: 'Other' }],
        }),
        (error: unknown) => {
          assert.ok(error instanceof DirectoryImportError);
          assert.deepEqual(error.problems, ['companies: Key (internal_id)=(101) already exists.']);
          return true;
        },
      );
      assert.deepEqual(await dump(db), before);
    });
  });
});
