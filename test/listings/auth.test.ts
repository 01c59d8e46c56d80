import assert from 'node:assert/strict';
import { revokePartnerApp } from '../../cli/apps-store';
import { authFailuresDuring } from '../support/metrics-text';
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

const GRANTED = { appId: 'granted-app', key: 'granted-key-0123456789' };
const OTHER = { appId: 'other-app', key: 'other-key-0123456789ab' };
const REVOKED = { appId: 'revoked-app', key: 'revoked-key-0123456789' };

const NOT_PROVIDED = { detail: 'Authentication credentials were not provided.' };
const INCORRECT = { detail: 'Incorrect authentication credentials.' };
const DENIED = { detail: 'You do not have permission to perform this action.' };

describe('listings: authentication and permission', () => {
  let listing: ListingApi;
  let base: string;
  before(async () => {
    listing = await startListingApi();
    base = listing.api.url;
    const { knex } = listing.db;
    await insertUsers(knex, [1, 2]);
    await insertCompany(knex, 'acme', [[1, 'admin']]);
    await insertCompany(knex, 'globex', [[2, 'member']]);
    await insertJob(knex, 'acme-job', 'acme');
    await insertJob(knex, 'globex-job', 'globex', [[2, 'viewer']]);
    await insertApp(knex, GRANTED, ['acme']);
    await insertApp(knex, OTHER, ['globex']);
    await insertApp(knex, REVOKED, ['acme'], { revoked: true });
  });
  after(async () => listing.close());

  const get = (path: string, headers: Record<string, string>) => call(`${base}${path}`, { headers });

  it('missing or empty X-App-Id / X-App-Key: 403 "not provided"', async () => {
    const cases: Record<string, string>[] = [
      {},
      { 'X-App-Id': GRANTED.appId },
      { 'X-App-Key': GRANTED.key },
      { 'X-App-Id': '', 'X-App-Key': GRANTED.key },
    ];
    for (const headers of cases) {
      const res = await get('/v1/companies/acme/users/', headers);
      assert.equal(res.status, 403, JSON.stringify(headers));
      assert.deepEqual(res.body, NOT_PROVIDED);
    }
  });

  it('unknown app or wrong key: 403 "incorrect credentials", on both listings', async () => {
    const cases = [
      { 'X-App-Id': 'no-such-app', 'X-App-Key': GRANTED.key },
      { 'X-App-Id': GRANTED.appId, 'X-App-Key': `${GRANTED.key}x` },
      { 'X-App-Id': GRANTED.appId, 'X-App-Key': OTHER.key },
      { 'X-App-Id': "x' OR '1'='1", 'X-App-Key': GRANTED.key },
    ];
    for (const headers of cases) {
      for (const path of ['/v1/companies/acme/users/', '/v1/jobs/acme-job/users/']) {
        const res = await get(path, headers);
        assert.equal(res.status, 403, `${path} ${JSON.stringify(headers)}`);
        assert.deepEqual(res.body, INCORRECT);
      }
    }
  });

  it('a granted company and its jobs answer 200', async () => {
    const company = await get('/v1/companies/acme/users/', appHeaders(GRANTED));
    assert.equal(company.status, 200);
    assert.deepEqual(company.body.results, [expectedUser(1, 'admin')]);
    const job = await get('/v1/jobs/acme-job/users/', appHeaders(GRANTED));
    assert.equal(job.status, 200);
    assert.deepEqual(job.body.results, [expectedUser(1, 'admin')]);
  });

  it('another company, its jobs, and ids that do not exist all get the same 403', async () => {
    for (const path of [
      '/v1/companies/globex/users/',
      '/v1/jobs/globex-job/users/',
      '/v1/companies/nope/users/',
      '/v1/jobs/nope/users/',
    ]) {
      const res = await get(path, appHeaders(GRANTED));
      assert.equal(res.status, 403, path);
      assert.deepEqual(res.body, DENIED, path);
    }
    const allowed = await get('/v1/jobs/globex-job/users/', appHeaders(OTHER));
    assert.equal(allowed.status, 200);
    assert.deepEqual(allowed.body.results, [expectedUser(2, 'viewer')]);
  });

  it('ids that PostgreSQL cannot store (a NUL byte) answer 403 like any unknown id, never 500', async () => {
    for (const path of ['/v1/companies/%00/users/', '/v1/jobs/acme%00job/users/']) {
      const res = await get(path, appHeaders(GRANTED));
      assert.deepEqual([res.status, res.body], [403, DENIED], path);
    }
  });

  it('a revoked app gets 403', async () => {
    const res = await get('/v1/companies/acme/users/', appHeaders(REVOKED));
    assert.equal(res.status, 403);
    assert.deepEqual(res.body, INCORRECT);
  });

  it('revoking an app in use takes effect on its very next request', async () => {
    const app = { appId: 'short-lived', key: 'short-lived-key-01234' };
    await insertApp(listing.db.knex, app, ['acme']);
    assert.equal((await get('/v1/companies/acme/users/', appHeaders(app))).status, 200);
    assert.equal(await revokePartnerApp(listing.db.knex, app.appId), 'revoked');
    const res = await get('/v1/companies/acme/users/', appHeaders(app));
    assert.equal(res.status, 403);
    assert.deepEqual(res.body, INCORRECT);
  });

  it('403 bodies never echo the presented key', async () => {
    const res = await get('/v1/companies/acme/users/', {
      'X-App-Id': GRANTED.appId,
      'X-App-Key': 'secret-guess-987654321',
    });
    assert.equal(res.status, 403);
    assert.ok(!res.text.includes('secret-guess'));
  });

  it('counts each refusal by reason and route pattern (partner_service_auth_failures_total), never the app key', async () => {
    const { gained, text } = await authFailuresDuring(base, async () => {
      await get('/v1/companies/acme/users/', {});
      await get('/v1/companies/acme/users/', { 'X-App-Id': GRANTED.appId, 'X-App-Key': 'secret-guess-987654321' });
      await get('/v1/jobs/globex-job/users/', appHeaders(GRANTED));
      assert.equal((await get('/v1/companies/acme/users/', appHeaders(GRANTED))).status, 200);
    });
    assert.deepEqual(gained, {
      'missing_token /v1/companies/:company_pk/users': 1,
      'invalid_token /v1/companies/:company_pk/users': 1,
      'not_granted /v1/jobs/:job_pk/users': 1,
    });
    assert.ok(!text.includes('secret-guess') && !text.includes(GRANTED.key));
  });
});
