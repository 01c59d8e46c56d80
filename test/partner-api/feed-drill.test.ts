// The pull feed's promise under concurrency, on real processes: 16 writers post 4,000 webhooks through two
// `partner-service api` processes (dev server, PostgreSQL) while a reader follows the feed's cursor with limit 50,
// alternating between the two APIs. Meanwhile the test holds ordering lanes' rows locked for a second at a time:
// a writer whose webhook takes a place in a locked lane has inserted its row (and taken its transaction id) and
// waits, so its transaction commits a second after later ones. The feed's reader gets all 4,000, each once; a
// plain reader of the same rows by `(feed_xid, id) > cursor`, without the feed's horizon, skips some, so the test
// can fail.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { findFreePort } from '../../lib/ports';
import type { DevServer } from '../../temporal/dev-server';
import jobNew from '../fixtures/events/job-new.json';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { insertCompany } from '../listings/support';
import { serviceProcesses, stopServiceFixtures } from '../support/service-processes';
import { startTestDevServer, tempDir } from '../support/temporal';
import { postWebhook } from '../support/api';
import { INTERNAL_TOKEN } from '../support/tokens';
import { partnerApp, partnerCall } from './support';

const [KEYS, PER_KEY, WRITERS, PAGE] = [200, 20, 16, 50];
const TOTAL = KEYS * PER_KEY;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the partner feed under concurrency: two API processes, 16 writers, transactions held open', function () {
  this.timeout(600_000);
  let server: DevServer;
  let serverPort: number;
  let db: TestDatabase;
  let work: string;
  const queue = `feed-drill-${randomUUID()}`;

  before(async function () {
    this.timeout(120_000);
    work = await tempDir('feed-drill-');
    serverPort = await findFreePort();
    [server, db] = await Promise.all([startTestDevServer({ port: serverPort }), createTestDatabase()]);
  });
  after(async function () {
    this.timeout(60_000);
    await stopServiceFixtures(processes, { db, server, work });
  });

  const processes = serviceProcesses(
    () => ({ work, databaseUrl: db.url, temporalPort: serverPort, partnerUrl: 'http://127.0.0.1:9' }),
    { INTERNAL_API_TOKEN: INTERNAL_TOKEN, WEBHOOK_ORDERING: 'entity', PARTNER_API_REQUESTS_PER_MINUTE: '1000000' },
  );

  const jobEvent = (key: number, i: number) => ({
    ...structuredClone(jobNew),
    action: i === 0 ? 'new' : 'update',
    event_id: `feed-drill-${key}-${i}`,
    data: { ...structuredClone(jobNew.data), job: { ...jobNew.data.job, id: `feed-job-${key}` } },
  });

  it('the feed gives all 4,000 webhooks once each, none skipped; a plain id read of the same rows skips some', async () => {
    const apis = [await processes.startApi(queue), await processes.startApi(queue)];
    await insertCompany(db.knex, 'acme');
    const { headers } = await partnerApp(db.knex, 'feed-drill-app', ['acme'], ['deliveries:read']);
    const events = Array.from({ length: TOTAL }, (_, n) => jobEvent(n % KEYS, Math.floor(n / KEYS)));

    // The writers: each takes the next event and posts it to one of the two APIs.
    const accepted: string[] = [];
    const slowAccepts: number[] = [];
    let next = 0;
    let writing = true;
    const writers = Promise.all(
      Array.from({ length: WRITERS }, async (_, w) => {
        while (next < events.length) {
          const event = events[next++];
          const began = performance.now();
          const response = await postWebhook(apis[w % 2], INTERNAL_TOKEN, event);
          const text = await response.text();
          assert.equal(response.status, 202, text);
          accepted.push(JSON.parse(text).webhook_id);
          if (performance.now() - began >= 900) slowAccepts.push(performance.now() - began);
        }
      }),
    ).finally(() => (writing = false));

    // The holder: once lanes exist, 30 of them at a time locked for a second, then a pause.
    let held = 0;
    const holder = (async () => {
      while (writing) {
        await db.knex.transaction(async (trx) => {
          const { rows } = await trx.raw(
            'SELECT id FROM ordering_lanes ORDER BY random() LIMIT 30 FOR UPDATE SKIP LOCKED',
          );
          held += rows.length;
          await sleep(1000);
        });
        await sleep(150);
      }
    })();

    // The feed's reader, with limit 50, page after page, alternating between the APIs.
    const fromFeed: string[] = [];
    const feedReader = (async () => {
      let after = '';
      for (let page = 0; fromFeed.length < TOTAL; page++) {
        const query = `/events?limit=${PAGE}&wait=2${after ? `&after=${after}` : ''}`;
        const reply = await partnerCall(apis[page % 2], headers, 'GET', query);
        assert.equal(reply.status, 200, reply.text);
        fromFeed.push(...reply.body.results.map((item: { id: string }) => item.id));
        after = reply.body.next_cursor ?? '';
      }
    })();

    // The plain reader: the same rows, by the number each took at insert, without the horizon.
    const plain: string[] = [];
    const plainReader = (async () => {
      let cursor = { xid: '0', id: '00000000-0000-0000-0000-000000000000' };
      let emptyAfterWriting = 0;
      while (emptyAfterWriting < 3) {
        const { rows } = await db.knex.raw(
          `SELECT id, feed_xid::text AS xid FROM webhook_events
            WHERE company_id = 'acme' AND (feed_xid, id) > (?::xid8, ?::uuid)
            ORDER BY feed_xid, id LIMIT ${PAGE}`,
          [cursor.xid, cursor.id],
        );
        plain.push(...rows.map((row: { id: string }) => row.id));
        if (rows.length) cursor = rows.at(-1);
        else if (!writing) emptyAfterWriting += 1;
        if (rows.length < PAGE) await sleep(5);
      }
    })();

    await writers;
    await holder;
    await Promise.race([
      feedReader,
      sleep(120_000).then(() => {
        throw new Error(`the feed's reader has ${fromFeed.length} of ${TOTAL} two minutes after the writers ended`);
      }),
    ]);
    await plainReader;

    assert.equal(accepted.length, TOTAL);
    assert.ok(held > 0, 'the holder locked lanes');
    assert.ok(slowAccepts.length > 0, 'some writers waited on a held lane');
    assert.equal(fromFeed.length, TOTAL, 'the feed gave 4,000 items');
    assert.equal(new Set(fromFeed).size, TOTAL, 'each once');
    assert.deepEqual([...fromFeed].sort(), [...accepted].sort(), 'exactly the accepted webhooks');
    const skipped = TOTAL - new Set(plain).size;
    console.log(
      `      ${slowAccepts.length} accepts waited 0.9 s or more on a held lane; the plain reader skipped ${skipped}`,
    );
    assert.equal(new Set(plain).size, plain.length, 'the plain reader saw none twice');
    assert.ok(skipped > 0, 'the plain read skipped rows that committed behind its cursor');
  });
});
