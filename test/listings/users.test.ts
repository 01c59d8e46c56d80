import assert from 'node:assert/strict';
import {
  appHeaders,
  call,
  expectedUser,
  insertApp,
  insertCompany,
  insertJob,
  insertUsers,
  startListingApi,
  type ListingApi,
} from './support';

const APP = { appId: 'users-app', key: 'users-key-0123456789ab' };

describe('listings: the users of a company and of a job', () => {
  let listing: ListingApi;
  const get = async (path: string) => {
    const res = await call(`${listing.api.url}${path}`, { headers: appHeaders(APP) });
    assert.equal(res.status, 200, `${path}: ${res.text}`);
    return res.body;
  };

  before(async () => {
    listing = await startListingApi();
    const { knex } = listing.db;
    await insertUsers(knex, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    // Inserted out of order: the listing must still be by id.
    await insertCompany(knex, 'acme', [
      [9, 'manager'],
      [1, 'admin'],
      [4, 'member'],
      [2, 'owner'],
      [3, 'manager'],
      [5, 'admin'],
      [6, 'member'],
      [8, 'member'],
    ]);
    await insertCompany(knex, 'globex', [
      [10, 'admin'],
      [11, 'owner'],
      [1, 'member'],
    ]);
    await insertCompany(knex, 'empty');
    await insertJob(knex, 'acme-dev', 'acme', [
      [5, 'job_owner'], // also a company admin: shown as admin, once
      [6, 'collaborator'],
      [7, 'viewer'], // no company membership at all
      [8, 'job_interviewer'],
      [9, 'viewer'], // a company manager: managers do not see every job, so the job role shows
      [12, 'collaborator'],
    ]);
    await insertJob(knex, 'acme-ops', 'acme');
    await insertJob(knex, 'globex-ops', 'globex', [[1, 'job_owner']]);
    await insertApp(knex, APP, ['acme', 'globex', 'empty']);
  });
  after(async () => listing.close());

  it('company users: every member with the company role, by id, in the exact envelope', async () => {
    assert.deepEqual(await get('/v1/companies/acme/users/'), {
      count: 8,
      next: null,
      previous: null,
      results: [
        expectedUser(1, 'admin'),
        expectedUser(2, 'owner'),
        expectedUser(3, 'manager'),
        expectedUser(4, 'member'),
        expectedUser(5, 'admin'),
        expectedUser(6, 'member'),
        expectedUser(8, 'member'),
        expectedUser(9, 'manager'),
      ],
    });
  });

  it('each user object has exactly the fields of spec 2.5, emails primary first', async () => {
    const [first, second] = (await get('/v1/companies/acme/users/')).results;
    assert.deepEqual(Object.keys(first).sort(), [
      'email_primary',
      'emails',
      'first_name',
      'id',
      'is_agency_user',
      'last_name',
      'role',
    ]);
    assert.deepEqual(second.emails, ['user2@example.test', 'alt2@example.org']);
  });

  it('a company without members is a valid empty page', async () => {
    assert.deepEqual(await get('/v1/companies/empty/users/'), { count: 0, next: null, previous: null, results: [] });
  });

  it('job users: explicit job roles plus the company admins and owners, each once, company role first', async () => {
    assert.deepEqual(await get('/v1/jobs/acme-dev/users/'), {
      count: 8,
      next: null,
      previous: null,
      results: [
        expectedUser(1, 'admin'),
        expectedUser(2, 'owner'),
        expectedUser(5, 'admin'),
        expectedUser(6, 'collaborator'),
        expectedUser(7, 'viewer'),
        expectedUser(8, 'job_interviewer'),
        expectedUser(9, 'viewer'),
        expectedUser(12, 'collaborator'),
      ],
    });
  });

  it('a job without explicit roles lists the company admins and owners only', async () => {
    assert.deepEqual(await get('/v1/jobs/acme-ops/users/'), {
      count: 3,
      next: null,
      previous: null,
      results: [expectedUser(1, 'admin'), expectedUser(2, 'owner'), expectedUser(5, 'admin')],
    });
  });

  it("another company's admins never leak into a job, and a plain member keeps the job role", async () => {
    assert.deepEqual((await get('/v1/jobs/globex-ops/users/')).results, [
      expectedUser(1, 'job_owner'),
      expectedUser(10, 'admin'),
      expectedUser(11, 'owner'),
    ]);
  });

  it('job listings page both ways across both kinds of access without repeats', async () => {
    const seen: number[] = [];
    let url: string | null = `${listing.api.url}/v1/jobs/acme-dev/users/?page_size=3`;
    while (url) {
      const res = await call(url, { headers: appHeaders(APP) });
      assert.equal(res.status, 200);
      assert.equal(res.body.count, 8);
      seen.push(...res.body.results.map((u: { id: number }) => u.id));
      url = res.body.next;
    }
    assert.deepEqual(seen, [1, 2, 5, 6, 7, 8, 9, 12]);

    const back: number[] = [];
    let previous: string | null = `${listing.api.url}/v1/jobs/acme-dev/users/?page=last&page_size=3`;
    while (previous) {
      const res = await call(previous, { headers: appHeaders(APP) });
      assert.equal(res.status, 200);
      back.unshift(...res.body.results.map((u: { id: number }) => u.id));
      previous = res.body.previous;
    }
    assert.deepEqual(back, [1, 2, 5, 6, 7, 8, 9, 12]);
  });
});
