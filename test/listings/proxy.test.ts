import assert from 'node:assert/strict';
import {
  appHeaders,
  call,
  insertApp,
  insertCompany,
  insertUsers,
  range,
  startListingApi,
  type ListingApi,
} from './support';

const APP = { appId: 'proxy-app', key: 'proxy-key-0123456789ab' };
const FORWARDED = { 'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'partners.example.com' };

async function listingWith(env: NodeJS.ProcessEnv): Promise<ListingApi> {
  const listing = await startListingApi(env);
  const { knex } = listing.db;
  await insertUsers(knex, range(1, 3));
  await insertCompany(
    knex,
    'acme',
    range(1, 3).map((id) => [id, 'member']),
  );
  await insertApp(knex, APP, ['acme']);
  return listing;
}

describe('listings: absolute links behind a proxy', () => {
  describe('TRUST_PROXY=true', () => {
    let listing: ListingApi;
    before(async () => {
      listing = await listingWith({ TRUST_PROXY: 'true' });
    });
    after(async () => listing.close());

    it('takes the scheme and host of next and previous from X-Forwarded-Proto and X-Forwarded-Host', async () => {
      const page2 = await call(`${listing.api.url}/v1/companies/acme/users/?page=2&page_size=1`, {
        headers: { ...appHeaders(APP), ...FORWARDED },
      });
      assert.equal(page2.status, 200);
      assert.equal(page2.body.previous, 'https://partners.example.com/v1/companies/acme/users/?page_size=1');
      assert.match(
        page2.body.next,
        /^https:\/\/partners\.example\.com\/v1\/companies\/acme\/users\/\?cursor=[\w-]+&page=3&page_size=1$/,
      );
    });

    it('uses the first of comma-separated forwarded values, and http for any scheme but https', async () => {
      const res = await call(`${listing.api.url}/v1/companies/acme/users/?page=2&page_size=1`, {
        headers: {
          ...appHeaders(APP),
          'X-Forwarded-Proto': 'gopher, https',
          'X-Forwarded-Host': 'a.example.com:8443, b.example.com',
        },
      });
      assert.equal(res.body.previous, 'http://a.example.com:8443/v1/companies/acme/users/?page_size=1');
    });

    it('answers 400 when the forwarded host is not a host name', async () => {
      for (const host of ['evil.example.com/path', 'evil.example.com:1:2', 'bad host', '"><script>']) {
        const res = await call(`${listing.api.url}/v1/companies/acme/users/`, {
          headers: { ...appHeaders(APP), 'X-Forwarded-Host': host },
        });
        assert.equal(res.status, 400, host);
        assert.deepEqual(res.body, { detail: 'Invalid Host header.' });
      }
    });
  });

  describe('TRUST_PROXY=false (the default)', () => {
    let listing: ListingApi;
    before(async () => {
      listing = await listingWith({});
    });
    after(async () => listing.close());

    it('ignores X-Forwarded-* and uses the request Host', async () => {
      const res = await call(`${listing.api.url}/v1/companies/acme/users/?page=2&page_size=1`, {
        headers: { ...appHeaders(APP), ...FORWARDED, Host: 'api.internal:3000' },
      });
      assert.equal(res.status, 200);
      assert.equal(res.body.previous, 'http://api.internal:3000/v1/companies/acme/users/?page_size=1');
      assert.match(res.body.next, /^http:\/\/api\.internal:3000\/v1\/companies\/acme\/users\/\?cursor=/);
    });
  });
});
