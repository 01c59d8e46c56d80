// The pull feed (GET /partner/v1/events) and its consumers on the real API and PostgreSQL, rows written straight
// into the tables: each item whole with the exact body, cursors page by page, the app's companies only, tombstones
// after the payload purge and after an erasure, 410 for a cursor past retention, the filters, the long poll's
// answer within 1 s of a new row, reading with deliveries paused and no endpoint, consumers' positions, bad input.
import assert from 'node:assert/strict';
import { openDatabase } from '../../db/database';
import { loadConfig } from '../../lib/config';
import { createLogger } from '../../lib/logger';
import { removeDueBodies } from '../../store/personal-data/retention-purge';
import { startTestApi, type TestApi } from '../support/api';
import { insertCompany } from '../listings/support';
import { documented, minutesAgo, seedLane, seedWebhook, type SeededWebhook } from './delivery-rows';
import { partnerApp, partnerCall } from './support';

const DAY = 86_400_000;

describe('partner API: the pull feed and its consumers', function () {
  this.timeout(60_000);
  let stack: TestApi;
  let base: string;
  let headers: Record<string, string>;
  const rows: SeededWebhook[] = [];
  const get = async (query: string, as = headers) => {
    const reply = await partnerCall(base, as, 'GET', `/events${query}`);
    documented('/partner/v1/events', 'get', reply);
    return reply;
  };
  /** Every item from the start, following `next_cursor` with `limit`. */
  const readAll = async (limit: number, extra = '') => {
    const items: any[] = [];
    let after = '';
    for (;;) {
      const page = await get(`?limit=${limit}${extra}${after ? `&after=${after}` : ''}`);
      assert.equal(page.status, 200, page.text);
      if (page.body.results.length === 0) return items;
      items.push(...page.body.results);
      after = page.body.next_cursor;
    }
  };

  before(async () => {
    stack = await startTestApi({ WEBHOOK_LOG_RETENTION_DAYS: '40' });
    base = stack.api.url;
    const { knex } = stack.db;
    for (const company of ['acme', 'globex', 'initech']) await insertCompany(knex, company);
    headers = (await partnerApp(knex, 'feed-app', ['acme', 'globex'], ['deliveries:read'])).headers;
    // Written one transaction each, in this order: acme and globex interleaved, initech's never in the feed.
    for (let i = 0; i < 7; i++) {
      const company = ['acme', 'globex', 'initech'][i % 3];
      rows.push(await seedWebhook(knex, company, minutesAgo(60 - i), { status: i === 3 ? 'delivered' : 'failed' }));
    }
    await seedLane(knex, 'candidate-7', [rows[0].id, rows[4].id]);
  });
  after(async () => stack?.close());

  const mine = () => rows.filter((_, i) => i % 3 !== 2);

  it('gives every webhook of the app once, in the order written, each with its exact body, over pages of 2', async () => {
    const items = await readAll(2);
    assert.deepEqual(
      items.map((item) => item.id),
      mine().map((row) => row.id),
    );
    const first = items[0];
    assert.deepEqual(
      Object.keys(first),
      'id cursor event_type action company_id ordering_key sequence accepted_at status body'.split(' '),
    );
    assert.equal(first.ordering_key, 'candidate-7');
    assert.equal(first.sequence, 1);
    assert.equal(items[3].sequence, 2);
    assert.equal(items[1].ordering_key, null);
    assert.equal(first.status, 'failed');
    // The exact bytes: the page's text holds each body as the attempt sends it.
    const page = await get('?limit=5');
    for (const row of mine()) assert.ok(page.text.includes(`"body":${row.body}}`), row.id);
    const detail = await partnerCall(base, headers, 'GET', `/webhooks/${rows[0].id}/body`);
    assert.equal(JSON.stringify(first.body), JSON.stringify(JSON.parse(detail.text)));
  });

  it('a page names where to go on: the last cursor, or the same one after an empty page', async () => {
    const page = await get('?limit=3');
    assert.equal(page.body.next_cursor, page.body.results[2].cursor);
    assert.match(page.body.next, /^http:\/\/127\.0\.0\.1:\d+\/partner\/v1\/events\?limit=3&after=/);
    const tail = await get(`?after=${mine().length ? (await readAll(100)).at(-1).cursor : ''}`);
    assert.deepEqual(tail.body.results, []);
    assert.equal(tail.body.next_cursor, new URL(tail.body.next).searchParams.get('after'));
  });

  it('filters: delivery_success=false lists only the webhooks not delivered; event_type', async () => {
    const undelivered = await readAll(10, '&delivery_success=false');
    assert.deepEqual(
      undelivered.map((item) => item.id),
      mine()
        .filter((row) => row !== rows[3])
        .map((row) => row.id),
    );
    assert.deepEqual(
      (await readAll(10, '&delivery_success=true')).map((item) => item.id),
      [rows[3].id],
    );
    assert.equal((await readAll(10, '&event_type=job')).length, 0);
    assert.equal((await readAll(10, '&event_type=candidate')).length, mine().length);
  });

  it('tombstones: a body the purge removed, and one an erasure removed, say why and give no data', async () => {
    const { knex } = stack.db;
    const purged = await seedWebhook(knex, 'acme', minutesAgo(30), {
      status: 'delivered',
      finished_at: new Date(Date.now() - 31 * DAY),
    });
    const erased = await seedWebhook(knex, 'acme', minutesAgo(29), { status: 'failed' });
    assert.equal(await removeDueBodies(knex, new Date(Date.now() - 30 * DAY), new Date()), 1);
    await knex('webhook_events').where({ id: erased.id }).update({
      status: 'cancelled',
      status_reason: 'erasure',
      payload_removed_reason: 'erasure',
      payload_removed_at: new Date(),
      body: null,
    });
    const items = await readAll(50);
    const of = (id: string) => items.find((item) => item.id === id);
    assert.equal(of(purged.id).removed, 'retention');
    assert.equal(of(erased.id).removed, 'erasure');
    for (const id of [purged.id, erased.id]) {
      assert.equal('body' in of(id), false);
      const page = await get(`?limit=50`);
      assert.ok(!page.text.includes(id === purged.id ? purged.eventId : erased.eventId), 'no data of a tombstone');
    }
  });

  it("410 for a cursor older than the log retention, naming the feed's first event", async () => {
    // A company of its own: an old row written after newer ones happens only in a test.
    const { knex } = stack.db;
    await insertCompany(knex, 'umbrella');
    const app = await partnerApp(knex, 'feed-umbrella', ['umbrella'], ['deliveries:read']);
    await seedWebhook(knex, 'umbrella', new Date(Date.now() - 10 * DAY));
    const old = await seedWebhook(knex, 'umbrella', new Date(Date.now() - 45 * DAY), { status: 'delivered' });
    const all = (await get('?limit=10', app.headers)).body.results;
    const cursor = all.find((item: any) => item.id === old.id).cursor;
    assert.equal((await get(`?after=${all[0].cursor}`, app.headers)).status, 200);
    const expired = await get(`?after=${cursor}`, app.headers);
    assert.equal(expired.status, 410);
    assert.deepEqual(expired.body, {
      detail:
        "This cursor is older than the log's retention (40 days): events after it may have been removed. Read again " +
        'from the start (without `after`).',
      reason: 'cursor_expired',
      // Where a reader without `after` starts: the feed's first event.
      oldest_available_at: all[0].accepted_at,
    });
  });

  it('a long poll holds an empty page and answers within 1 s of a new webhook', async () => {
    const tail = (await readAll(100)).at(-1).cursor;
    const began = Date.now();
    const polled = get(`?after=${tail}&wait=10`);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const added = await seedWebhook(stack.db.knex, 'acme', new Date());
    const addedAt = Date.now();
    const reply = await polled;
    const answeredAt = Date.now();
    assert.deepEqual(
      reply.body.results.map((item: any) => item.id),
      [added.id],
    );
    assert.ok(answeredAt - addedAt < 1000, `answered ${answeredAt - addedAt} ms after the webhook`);
    assert.ok(addedAt - began >= 1500);
    const empty = Date.now();
    const timedOut = await get(`?after=${reply.body.next_cursor}&wait=1`);
    assert.deepEqual(timedOut.body.results, []);
    assert.ok(Date.now() - empty >= 1000);
  });

  it('reads while deliveries are paused and with no endpoint, and reading changes no delivery', async () => {
    const { knex } = stack.db;
    await knex('partner_gate')
      .insert({ task_queue: 'partner-webhooks', paused_at: new Date(), pause_reason: 'feed test' })
      .onConflict('task_queue')
      .merge();
    const columns = ['id', 'status', 'claimed_attempt', 'held_since', 'updated_at', 'finished_at'];
    const before = await knex('webhook_events').orderBy('id').select(columns);
    assert.ok((await readAll(3)).length > 0);
    assert.deepEqual(await knex('webhook_events').orderBy('id').select(columns), before);
  });

  it('the app companies only; without deliveries:read 403; another app sees its own', async () => {
    const lister = await partnerApp(stack.db.knex, 'feed-lister', ['acme'], ['listings']);
    const refused = await get('', lister.headers);
    assert.equal(refused.status, 403);
    assert.equal(refused.body.reason, 'missing_scope');
    const initech = await partnerApp(stack.db.knex, 'feed-initech', ['initech'], ['deliveries:read']);
    const page = await get('?limit=100', initech.headers);
    assert.deepEqual(
      page.body.results.map((item: any) => item.id),
      rows.filter((_, i) => i % 3 === 2).map((row) => row.id),
    );
  });

  it('consumers: PUT stores a position, GET reads it, per app; bad names and cursors are 400, unknown 404', async () => {
    const [first] = (await get('?limit=1')).body.results;
    const put = await partnerCall(base, headers, 'PUT', '/consumers/billing-sync', { cursor: first.cursor });
    assert.equal(put.status, 200, put.text);
    documented('/partner/v1/consumers/{name}', 'put', put);
    assert.deepEqual({ ...put.body, updated_at: 'x' }, { name: 'billing-sync', cursor: first.cursor, updated_at: 'x' });
    const read = await partnerCall(base, headers, 'GET', '/consumers/billing-sync');
    assert.equal(read.status, 200);
    documented('/partner/v1/consumers/{name}', 'get', read);
    assert.deepEqual(read.body, put.body);
    const resumed = await get(`?after=${read.body.cursor}&limit=1`);
    assert.equal(resumed.body.results[0].id, mine()[1].id);

    const other = await partnerApp(stack.db.knex, 'feed-other', ['acme'], ['deliveries:read']);
    const unknown = await partnerCall(base, other.headers, 'GET', '/consumers/billing-sync');
    assert.equal(unknown.status, 404);
    documented('/partner/v1/consumers/{name}', 'get', unknown);
    for (const [name, body] of [
      ['bad name!', { cursor: first.cursor }],
      ['x'.repeat(65), { cursor: first.cursor }],
      ['ok', { cursor: 'not-a-cursor' }],
      ['ok', { cursor: 42 }],
      ['ok', { cursor: first.cursor, extra: 1 }],
    ] as const) {
      const refused = await partnerCall(base, headers, 'PUT', `/consumers/${encodeURIComponent(name)}`, body);
      assert.equal(refused.status, 400, `${name} ${JSON.stringify(body)}: ${refused.text}`);
      documented('/partner/v1/consumers/{name}', 'put', refused);
    }
  });

  it('bad queries are 400 naming the parameter', async () => {
    for (const [query, path] of [
      ['?after=garbage', 'after'],
      ['?limit=0', 'limit'],
      ['?limit=501', 'limit'],
      ['?wait=31', 'wait'],
      ['?wait=-1', 'wait'],
      ['?event_type=order', 'event_type'],
      ['?delivery_success=maybe', 'delivery_success'],
      ['?unknown=1', ''],
    ] as const) {
      const reply = await get(query);
      assert.equal(reply.status, 400, query);
      assert.equal(reply.body.detail, 'Invalid filter or paging.', query);
      if (path) assert.equal(reply.body.errors[0].path, path, query);
    }
  });

  it("bounds the service's own sessions: statement and idle-in-transaction timeouts on every connection", async () => {
    for (const [env, expected] of [
      [{}, ['5min', '1min']],
      [{ DATABASE_STATEMENT_TIMEOUT_MS: '1500', DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: '0' }, ['1500ms', '0']],
    ] as const) {
      const database = await openDatabase(loadConfig({ ...env, DATABASE_URL: stack.db.url }), createLogger('silent'));
      try {
        const { rows } = await database.knex.raw(
          "SELECT current_setting('statement_timeout') AS s, current_setting('idle_in_transaction_session_timeout') AS i",
        );
        assert.deepEqual([rows[0].s, rows[0].i], expected);
      } finally {
        await database.close();
      }
    }
    const idle = await openDatabase(
      loadConfig({ DATABASE_URL: stack.db.url, DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: '300' }),
      createLogger('silent'),
    );
    try {
      // A transaction of ours left idle past its bound is ended by the server: it cannot hold the feed.
      await assert.rejects(
        idle.knex.transaction(async (trx) => {
          await trx.raw('SELECT pg_current_xact_id()');
          await new Promise((resolve) => setTimeout(resolve, 800));
          await trx.raw('SELECT 1');
        }),
      );
    } finally {
      await idle.close();
    }
  });
});
