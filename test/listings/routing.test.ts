import assert from 'node:assert/strict';
import {
  appHeaders,
  call,
  expectedUser,
  insertApp,
  insertCompany,
  insertUsers,
  startListingApi,
  type ListingApi,
} from './support';

const APP = { appId: 'routing-app', key: 'routing-key-0123456789' };
const JSON_TYPE = 'application/json; charset=utf-8';

describe('listings: routes, methods and versions', () => {
  let listing: ListingApi;
  let base: string;
  before(async () => {
    listing = await startListingApi({ API_VERSIONS: 'v1,v2beta' });
    base = listing.api.url;
    const { knex } = listing.db;
    await insertUsers(knex, [1, 2]);
    await insertCompany(knex, 'acme', [
      [1, 'owner'],
      [2, 'member'],
    ]);
    await insertApp(knex, APP, ['acme']);
  });
  after(async () => listing.close());

  const expectedBody = {
    count: 2,
    next: null,
    previous: null,
    results: [expectedUser(1, 'owner'), expectedUser(2, 'member')],
  };

  it('GET works with and without the trailing slash, as JSON with Allow', async () => {
    for (const path of ['/v1/companies/acme/users/', '/v1/companies/acme/users']) {
      const res = await call(`${base}${path}`, { headers: appHeaders(APP) });
      assert.equal(res.status, 200, path);
      assert.equal(res.headers['content-type'], JSON_TYPE);
      assert.equal(res.headers.allow, 'GET, HEAD, OPTIONS');
      assert.deepEqual(res.body, expectedBody);
    }
  });

  it('serves every configured API version', async () => {
    const res = await call(`${base}/v2beta/companies/acme/users/`, { headers: appHeaders(APP) });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, expectedBody);
  });

  it('answers 404 {"detail": "Not found."} for an unknown version, a differently cased one, or an unknown path', async () => {
    for (const path of [
      '/v3/companies/acme/users/',
      '/V1/companies/acme/users/',
      '/v1/companies/acme/members/',
      '/v1/companies/acme/users/extra',
    ]) {
      const res = await call(`${base}${path}`, { headers: appHeaders(APP) });
      assert.equal(res.status, 404, path);
      assert.equal(res.headers['content-type'], JSON_TYPE);
      assert.deepEqual(res.body, { detail: 'Not found.' }, path);
    }
  });

  it('HEAD answers like GET without a body', async () => {
    const get = await call(`${base}/v1/companies/acme/users/`, { headers: appHeaders(APP) });
    const head = await call(`${base}/v1/companies/acme/users/`, { method: 'HEAD', headers: appHeaders(APP) });
    assert.equal(head.status, 200);
    assert.equal(head.text, '');
    assert.equal(head.headers['content-type'], JSON_TYPE);
    assert.equal(head.headers['content-length'], String(Buffer.byteLength(get.text)));
    assert.equal(head.headers.allow, 'GET, HEAD, OPTIONS');
  });

  it('OPTIONS answers 200 with Allow and the view metadata, without credentials', async () => {
    const res = await call(`${base}/v1/jobs/any-job/users/`, { method: 'OPTIONS' });
    assert.equal(res.status, 200);
    assert.equal(res.headers.allow, 'GET, HEAD, OPTIONS');
    assert.equal(res.headers['content-type'], JSON_TYPE);
    assert.deepEqual(res.body, {
      name: 'Job Users',
      description: 'The users who have access to a job.',
      renders: ['application/json'],
      parses: ['application/json'],
    });
  });

  it('any other method gets 405 naming the method, with Allow, on both listings', async () => {
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE', 'TRACE', 'PROPFIND']) {
      for (const path of ['/v1/companies/acme/users/', '/v1/jobs/any-job/users']) {
        const res = await call(`${base}${path}`, { method, headers: appHeaders(APP) });
        assert.equal(res.status, 405, `${method} ${path}`);
        assert.equal(res.headers.allow, 'GET, HEAD, OPTIONS');
        assert.equal(res.headers['content-type'], JSON_TYPE);
        assert.deepEqual(res.body, { detail: `Method "${method}" not allowed.` });
      }
    }
  });
});
