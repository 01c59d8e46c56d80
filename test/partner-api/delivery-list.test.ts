// GET /partner/v1/webhooks on the real API and PostgreSQL: only the app's companies, the filters, both links.
import assert from 'node:assert/strict';
import type { TestApi } from '../support/api';
import { insertCompany } from '../listings/support';
import { partnerApp, partnerCall } from './support';
import { documented, seedAttempt, seedLane, seedWebhook, startReadApi, type SeededWebhook } from './delivery-rows';

const T0 = Date.UTC(2026, 10, 1, 12);
const at = (minutes: number) => new Date(T0 + minutes * 60_000);

describe('partner API: the delivery list', () => {
  let stack: TestApi;
  let base: string;
  let headers: Record<string, string>;
  /** The app's companies' rows, newest first. */
  const mine: SeededWebhook[] = [];
  let other: SeededWebhook;

  before(async () => {
    ({ stack, base, headers } = await startReadApi(['acme', 'globex', 'initech'], 'list-app', ['acme', 'globex']));
    const { knex } = stack.db;
    // Seven rows of the app's companies, one minute apart, and the other company's rows between them.
    for (let i = 0; i < 7; i++) {
      mine.unshift(await seedWebhook(knex, i % 2 ? 'globex' : 'acme', at(i), i === 3 ? { status: 'delivered' } : {}));
      other = await seedWebhook(knex, 'initech', at(i + 0.5));
    }
    await seedAttempt(knex, mine[3].id, 1, { startedAt: at(3), durationMs: 40, httpStatus: 200 });
    await seedLane(knex, 'candidate-7', [mine[6].id, mine[4].id]);
  });
  after(async () => stack.close());

  const list = async (query: string) => {
    const reply = await partnerCall(base, headers, 'GET', `/webhooks${query}`);
    documented('/partner/v1/webhooks', 'get', reply);
    return reply;
  };

  it("lists only the app's companies' webhooks, newest first, each row as documented", async () => {
    const reply = await list('');
    assert.equal(reply.status, 200);
    assert.deepEqual(
      reply.body.results.map((row: any) => row.id),
      mine.map((row) => row.id),
    );
    assert.equal(reply.body.next, null);
    assert.equal(reply.body.previous, null);
    const delivered = reply.body.results[3];
    assert.deepEqual(delivered, {
      id: mine[3].id,
      event_id: mine[3].eventId,
      event_type: 'candidate',
      action: 'new',
      company_id: 'globex',
      status: 'delivered',
      ordering_key: null,
      sequence: null,
      attempts: 1,
      accepted_at: at(3).toISOString(),
      finished_at: null,
      is_test: false,
      redelivery_of: null,
    });
    assert.deepEqual([reply.body.results[6].ordering_key, reply.body.results[6].sequence], ['candidate-7', 1]);
    assert.ok(!JSON.stringify(reply.body).includes(other.id));
    assert.ok(!('body' in delivered) && !('event' in delivered));
  });

  /** Asserts a page's rows are `expected`, in order. */
  const rowsAre = (page: { body: { results: Array<{ id: string }> } }, expected: SeededWebhook[]) =>
    assert.deepEqual(
      page.body.results.map((row) => row.id),
      expected.map((row) => row.id),
    );

  it('pages with absolute next and previous links, both ways, with the filters kept', async () => {
    const first = await list('?limit=3');
    rowsAre(first, mine.slice(0, 3));
    assert.equal(first.body.previous, null);
    assert.match(first.body.next, new RegExp(`^${base}/partner/v1/webhooks\\?limit=3&cursor=`));
    const second = await call(first.body.next);
    rowsAre(second, mine.slice(3, 6));
    const third = await call(second.body.next);
    rowsAre(third, [mine[6]]);
    assert.equal(third.body.next, null);
    const back = await call(third.body.previous);
    rowsAre(back, mine.slice(3, 6));
    const backAgain = await call(back.body.previous);
    rowsAre(backAgain, mine.slice(0, 3));
    assert.equal(backAgain.body.previous, null);
    const forwardAgain = await call(backAgain.body.next);
    rowsAre(forwardAgain, mine.slice(3, 6));
  });

  const call = async (url: string) => {
    const reply = await partnerCall(base, headers, 'GET', url.slice(`${base}/partner/v1`.length));
    assert.equal(reply.status, 200);
    return reply;
  };

  it('filters by company (another company: an empty page), status, time window and ordering key', async () => {
    const ids = async (query: string) => (await list(query)).body.results.map((row: any) => row.id);
    assert.deepEqual(await ids('?company_id=globex'), [mine[1].id, mine[3].id, mine[5].id]);
    assert.deepEqual(await ids('?company_id=initech'), []);
    assert.deepEqual(await ids('?company_id=nobody'), []);
    assert.deepEqual(await ids('?status=delivered'), [mine[3].id]);
    assert.deepEqual(await ids(`?since=${at(2).toISOString()}&until=${at(5).toISOString()}`), [
      mine[2].id,
      mine[3].id,
      mine[4].id,
    ]);
    assert.deepEqual(await ids('?ordering_key=candidate-7'), [mine[4].id, mine[6].id]);
    assert.deepEqual(await ids('?ordering_key=candidate-8'), []);
    assert.deepEqual(await ids('?event_type=job'), []);
    assert.deepEqual(await ids('?action=new&event_type=candidate&company_id=acme&limit=1'), [mine[0].id]);
  });

  it('answers 400 naming each bad parameter', async () => {
    const cases: Array<[string, string]> = [
      ['?limit=101', 'limit'],
      ['?limit=0', 'limit'],
      ['?status=lost', 'status'],
      ['?cursor=nope', 'cursor'],
      ['?since=yesterday', 'since'],
      [`?since=${at(5).toISOString()}&until=${at(1).toISOString()}`, 'until'],
      ['?colour=red', 'colour'],
    ];
    for (const [query, path] of cases) {
      const reply = await list(query);
      assert.equal(reply.status, 400, query);
      assert.equal(reply.body.detail, 'Invalid filter or paging.');
      assert.ok(
        reply.body.errors.some((e: { path: string }) => e.path === path),
        `${query}: ${JSON.stringify(reply.body.errors)}`,
      );
    }
  });

  it('reads each company from its index range, newest first (the plan at many rows)', async () => {
    const { knex } = stack.db;
    await knex.raw(`INSERT INTO webhook_events (id, event_id, event_type, action, company_id, body, created_at)
      SELECT gen_random_uuid(), 'bulk-' || g, 'candidate', 'new', 'bulk-' || (g % 50), '{}',
             now() - g * interval '1 second' FROM generate_series(1, 20000) g`);
    await knex.raw('ANALYZE webhook_events');
    for (const company of ['bulk-7', 'bulk-8']) await insertCompany(knex, company);
    const app = await partnerApp(knex, 'bulk-app', ['bulk-7', 'bulk-8', 'acme'], ['deliveries:read']);
    // The statement the route runs, caught on its way to PostgreSQL, for a first page and the page after it.
    const statements: Array<{ sql: string; bindings: readonly string[] }> = [];
    const listen = (query: { sql: string; bindings: readonly string[] }) => {
      if (query.sql.includes('CROSS JOIN LATERAL')) statements.push(query);
    };
    knex.on('query', listen);
    try {
      const first = await partnerCall(base, app.headers, 'GET', '/webhooks?limit=50');
      assert.equal(first.body.results.length, 50);
      const second = await partnerCall(base, app.headers, 'GET', first.body.next.slice(`${base}/partner/v1`.length));
      assert.equal(second.body.results.length, 50);
    } finally {
      knex.removeListener('query', listen);
    }
    assert.equal(statements.length, 2);
    for (const statement of statements) {
      const plan = await knex.raw(`EXPLAIN ${statement.sql}`, statement.bindings);
      const text = plan.rows.map((row: { 'QUERY PLAN': string }) => row['QUERY PLAN']).join('\n');
      assert.match(text, /Index Scan Backward using webhook_events_company_keyset on webhook_events/);
      // Only the few rows each company's range gave are merged and sorted, never the company's whole history.
      assert.doesNotMatch(text, /Seq Scan on webhook_events|Bitmap Heap Scan on webhook_events/);
    }
  });
});
