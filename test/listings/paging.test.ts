import assert from 'node:assert/strict';
import {
  appHeaders,
  call,
  expectedUser,
  insertApp,
  insertCompany,
  insertJob,
  insertUsers,
  range,
  startListingApi,
  type ListingApi,
  type Reply,
} from './support';

const APP = { appId: 'paging-app', key: 'paging-key-0123456789a' };
// 620 users with gaps between their ids, so that keyset bounds and offsets differ.
const IDS = range(1, 620).map((i) => i * 7);
const INVALID_PAGE = { detail: 'Invalid page.' };
const INVALID_CURSOR = { detail: 'Invalid cursor' };

describe('listings: paging', () => {
  let listing: ListingApi;
  let base: string;
  const get = (pathOrUrl: string): Promise<Reply> =>
    call(pathOrUrl.startsWith('http') ? pathOrUrl : `${base}${pathOrUrl}`, { headers: appHeaders(APP) });
  const ids = (res: Reply): number[] => res.body.results.map((u: { id: number }) => u.id);
  const cursorOf = (link: string) => new URL(link).searchParams.get('cursor')!;

  before(async () => {
    listing = await startListingApi();
    base = listing.api.url;
    const { knex } = listing.db;
    await insertUsers(knex, IDS);
    await insertCompany(
      knex,
      'big',
      IDS.map((id) => [id, id % 3 === 0 ? 'manager' : 'member']),
    );
    await insertCompany(knex, 'empty');
    await insertJob(knex, 'big-job', 'big');
    await insertApp(knex, APP, ['big', 'empty']);
  });
  after(async () => listing.close());

  it('the first page: 50 users, a next link with page and cursor, no previous', async () => {
    const res = await get('/v1/companies/big/users/');
    assert.equal(res.status, 200);
    assert.equal(res.body.count, 620);
    assert.deepEqual(
      res.body.results,
      IDS.slice(0, 50).map((id) => expectedUser(id, id % 3 === 0 ? 'manager' : 'member')),
    );
    assert.equal(res.body.previous, null);
    assert.match(res.body.next, new RegExp(`^${base}/v1/companies/big/users/\\?cursor=[A-Za-z0-9_-]+&page=2$`));
  });

  it('page_size: positive integers up to 500; anything else means 50', async () => {
    assert.equal((await get('/v1/companies/big/users/?page_size=7')).body.results.length, 7);
    assert.equal((await get('/v1/companies/big/users/?page_size=500')).body.results.length, 500);
    for (const bad of ['0', '-3', 'abc', '', '2.5', '1e2']) {
      const res = await get(`/v1/companies/big/users/?page_size=${bad}`);
      assert.equal(res.status, 200, bad);
      assert.equal(res.body.results.length, 50, `page_size=${bad}`);
    }
    for (const big of ['501', '1000', '99999999999999999999']) {
      const res = await get(`/v1/companies/big/users/?page_size=${big}`);
      assert.deepEqual(ids(res), IDS.slice(0, 500), `page_size=${big}`);
      assert.match(res.body.next, /page=2/);
    }
  });

  it('?page=N reads page N directly; repeated parameters use the last value, as in Django', async () => {
    const res = await get('/v1/companies/big/users/?page=3&page_size=100');
    assert.deepEqual(ids(res), IDS.slice(200, 300));
    assert.deepEqual(ids(await get('/v1/companies/big/users/?page=1&page=4&page_size=100')), IDS.slice(300, 400));
    assert.deepEqual(ids(await get('/v1/companies/big/users/?page=%2B2&page_size=100')), IDS.slice(100, 200));
  });

  it('page=last is the last page', async () => {
    const res = await get('/v1/companies/big/users/?page=last&page_size=50');
    assert.deepEqual(ids(res), IDS.slice(600));
    assert.equal(res.body.next, null);
    assert.match(res.body.previous, /page=12/);
    assert.deepEqual(ids(await get(res.body.previous)), IDS.slice(550, 600));
    const exact = await get('/v1/companies/big/users/?page=last&page_size=62');
    assert.deepEqual(ids(exact), IDS.slice(558));
    assert.deepEqual(await get('/v1/companies/empty/users/?page=last').then((r) => r.body), {
      count: 0,
      next: null,
      previous: null,
      results: [],
    });
  });

  it('a page that is not a positive integer, or past the end, is 404 "Invalid page."; page 1 of nothing is fine', async () => {
    for (const page of ['0', '-1', 'abc', '', '1.5', 'LAST', '14', '99999999999999999999999']) {
      const res = await get(`/v1/companies/big/users/?page=${page}`);
      assert.equal(res.status, 404, `page=${page}`);
      assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
      assert.deepEqual(res.body, INVALID_PAGE, `page=${page}`);
    }
    assert.equal((await get('/v1/companies/big/users/?page=13')).status, 200);
    assert.deepEqual((await get('/v1/companies/empty/users/?page=2')).body, INVALID_PAGE);
    assert.deepEqual((await get('/v1/companies/empty/users/?page=1')).body, {
      count: 0,
      next: null,
      previous: null,
      results: [],
    });
  });

  for (const pageSize of [50, 7, 20]) {
    it(`walking next to the end, then previous back to the start, visits every user once each way (page_size=${pageSize})`, async () => {
      const forward: number[] = [];
      let res = await get(`/v1/companies/big/users/?page_size=${pageSize}&keep=me`);
      let pages = 1;
      forward.push(...ids(res));
      while (res.body.next) {
        const next: string = res.body.next;
        assert.equal(new URL(next).searchParams.get('keep'), 'me', 'links keep the other parameters');
        assert.equal(new URL(next).searchParams.get('page'), String(pages + 1));
        res = await get(next);
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.count, 620);
        pages += 1;
        forward.push(...ids(res));
      }
      assert.equal(pages, Math.ceil(620 / pageSize));
      assert.deepEqual(forward, IDS);

      const backward: number[] = [...ids(res)].reverse();
      while (res.body.previous) {
        res = await get(res.body.previous);
        assert.equal(res.status, 200, res.text);
        backward.push(...[...ids(res)].reverse());
      }
      assert.deepEqual(backward, [...IDS].reverse());
      assert.equal(res.body.previous, null);
    });
  }

  it('walking previous from page=last reaches the first page through every user', async () => {
    let res = await get('/v1/companies/big/users/?page=last&page_size=45');
    const backward = [...ids(res)].reverse();
    while (res.body.previous) {
      res = await get(res.body.previous);
      backward.push(...[...ids(res)].reverse());
    }
    assert.deepEqual(backward, [...IDS].reverse());
  });

  it('next links are keyset positions: a user added before them neither repeats nor skips anyone', async () => {
    const { knex } = listing.db;
    await insertCompany(
      knex,
      'live',
      IDS.slice(0, 30).map((id) => [id, 'member']),
    );
    await knex('partner_app_companies').insert({ app_id: APP.appId, company_id: 'live' });
    const first = await get('/v1/companies/live/users/?page_size=10');
    await knex('users').insert({
      id: 1,
      first_name: 'New',
      last_name: 'Comer',
      email_primary: 'new@example.test',
      emails: ['new@example.test'],
    });
    await knex('company_users').insert({ company_id: 'live', user_id: 1, role: 'member' });
    const second = await get(first.body.next);
    assert.equal(second.body.count, 31);
    assert.deepEqual(ids(second), IDS.slice(10, 20), 'an offset would have repeated the last user of page 1');
  });

  it('a link page equals the same page read by number', async () => {
    const first = await get('/v1/companies/big/users/?page_size=40');
    const second = await get(first.body.next);
    const third = await get(second.body.next);
    assert.deepEqual(third.body, (await get('/v1/companies/big/users/?page_size=40&page=3')).body);
    const back = await get(third.body.previous);
    assert.deepEqual(back.body.results, second.body.results);
  });

  it('the link back to page 1 is the plain listing URL with the other parameters', async () => {
    const first = await get('/v1/companies/big/users/?page_size=10&z=1&a=2');
    const second = await get(first.body.next);
    assert.equal(second.body.previous, `${base}/v1/companies/big/users/?a=2&page_size=10&z=1`);
  });

  it('a tampered, foreign or inconsistent cursor is 404 "Invalid cursor"', async () => {
    const first = await get('/v1/companies/big/users/');
    const cursor = cursorOf(first.body.next);
    const flipped = `${cursor.slice(0, 3)}${cursor[3] === 'A' ? 'B' : 'A'}${cursor.slice(4)}`;
    const forged = Buffer.from(`n.2.350.${'0'.repeat(16)}`).toString('base64url');
    for (const query of [
      `cursor=${flipped}&page=2`,
      `cursor=${cursor}x&page=2`,
      `cursor=${cursor.slice(0, -2)}&page=2`,
      `cursor=${forged}`,
      'cursor=',
      'cursor=%00%FF',
      `cursor=${cursor}&page=3`,
      `cursor=${cursor}&page=last`,
    ]) {
      const res = await get(`/v1/companies/big/users/?${query}`);
      assert.equal(res.status, 404, query);
      assert.deepEqual(res.body, INVALID_CURSOR, query);
    }
    const foreign = await get(`/v1/jobs/big-job/users/?cursor=${cursor}`);
    assert.deepEqual([foreign.status, foreign.body], [404, INVALID_CURSOR]);
    const untouched = await get(`/v1/companies/big/users/?cursor=${cursor}`);
    assert.deepEqual(ids(untouched), IDS.slice(50, 100), 'the cursor alone is enough');
  });
});
