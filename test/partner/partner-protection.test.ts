// Partner protection on a real dev server with the service's own processes (`partner-service api` and
// `partner-service worker`): one cap for three workers, a pause that survives a worker SIGKILL and a server
// restart, an outage held by the breaker, Retry-After, and the hold ceiling. The partner is a loopback server
// that records each request's method, webhook-id and arrival.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type http from 'node:http';
import { Client, Connection } from '@temporalio/client';
import { findFreePort } from '../../lib/ports';
import type { DevServer } from '../../temporal/dev-server';
import { LOCAL_SQLITE_PRAGMAS } from '../../temporal/local-temporal';
import companySignup from '../fixtures/events/company-signup.json';
import { withOwnEntity } from '../support/own-entity';
import { runCli, waitForExit } from '../support/cli';
import { RELEASE_CATCH_UP_MS } from '../../application/partner/partner-recovery';
import { serviceProcesses, stopServiceFixtures } from '../support/service-processes';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { eventually } from '../support/eventually';
import { startTestDevServer, tempDir } from '../support/temporal';
import { startPartnerServer, type PartnerServer } from '../support/partner-server';
import { INTERNAL_TOKEN } from '../support/tokens';

interface Arrival {
  readonly method: string;
  readonly webhookId: string;
  readonly at: number;
}

/** The most arrivals in any one-second window. */
const maxInAnySecond = (times: readonly number[]) =>
  Math.max(0, ...times.map((t) => times.filter((u) => u >= t && u < t + 1000).length));

describe("partner protection on the dev server: the service's API and worker processes", function () {
  let work: string;
  let dbFilename: string;
  let server: DevServer;
  let serverPort: number;
  let partner: PartnerServer;
  let db: TestDatabase;
  let arrivals: Arrival[];
  /** How the partner answers a request; 204 unless a test says otherwise. */
  let respond: (req: http.IncomingMessage) => { status: number; headers?: Record<string, string> };

  before(async function () {
    this.timeout(60_000);
    work = await tempDir('partner-protection');
    dbFilename = path.join(work, 'temporal.db');
    serverPort = await findFreePort();
    server = await startTestDevServer({ dbFilename, port: serverPort, sqlitePragmas: LOCAL_SQLITE_PRAGMAS });
    db = await createTestDatabase();
    partner = await startPartnerServer((req, res) => {
      arrivals.push({ method: req.method ?? '', webhookId: String(req.headers['webhook-id'] ?? ''), at: Date.now() });
      const { status, headers = {} } = respond(req);
      res.writeHead(status, headers).end();
    });
  });

  beforeEach(() => {
    arrivals = [];
    respond = () => ({ status: 204 });
  });

  after(async function () {
    this.timeout(60_000);
    await stopServiceFixtures(processes, { partner, db, server, work });
  });

  const posts = () => arrivals.filter((a) => a.method === 'POST');
  const postsOf = (webhookId: string) => posts().filter((a) => a.webhookId === webhookId);
  const processes = serviceProcesses(
    () => ({ work, databaseUrl: db.url, temporalPort: serverPort, partnerUrl: partner.url }),
    {
      INTERNAL_API_TOKEN: INTERNAL_TOKEN,
      PARTNER_TIMEOUT_MS: '3000',
    },
  );
  const { common, startWorker, startApi, kill } = processes;

  const internal = (base: string, route: string, body?: object) =>
    fetch(`${base}/internal/v1${route}`, {
      method: body ? 'POST' : 'GET',
      headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, ...(body && { 'content-type': 'application/json' }) },
      ...(body && { body: JSON.stringify(body) }),
    });

  const partnerStatusOf = async (base: string) =>
    (await (await internal(base, '/partner')).json()) as {
      state: string;
      reason: string | null;
      held: number;
      breaker: { trips: number };
    };

  /** Sends `count` webhooks through the API, one after the other; each must be accepted (202). */
  async function send(base: string, count: number, prefix: string): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const response = await internal(
        base,
        '/webhooks',
        withOwnEntity({ ...companySignup, event_id: `${prefix}-${i}-${randomUUID()}` }),
      );
      const body = (await response.json()) as { webhook_id: string };
      assert.equal(response.status, 202, JSON.stringify(body));
      ids.push(body.webhook_id);
    }
    return ids;
  }

  const deliveredCount = async (ids: string[]) =>
    Number(
      (await db.knex('webhook_events').whereIn('id', ids).where({ status: 'delivered' }).count({ count: '*' }))[0]
        .count,
    );
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  /** When each webhook's attempts began their POST, by the workers' clocks (the same machine's). */
  const sentTimes = async (ids: string[]) =>
    (await db.knex('webhook_attempts').whereIn('webhook_id', ids).select('started_at')).map((row) =>
      (row.started_at as Date).getTime(),
    );

  it('one cap for three workers: at PARTNER_MAX_PER_SECOND=10 no second sees more than 13 POSTs, and `partner limit` changes it at run time', async function () {
    this.timeout(120_000);
    const queue = `cap-${randomUUID()}`;
    const env = { PARTNER_MAX_PER_SECOND: '10', PARTNER_MAX_CONCURRENCY: '20' };
    const api = await startApi(queue);
    await Promise.all([startWorker(queue, env), startWorker(queue, env), startWorker(queue, env)]);
    // Accepted while paused, so that the API's own work does not share the measured seconds.
    const backlog = async (count: number, prefix: string) => {
      assert.equal((await internal(api, '/partner/pause', { reason: 'cap measurement' })).status, 200);
      const ids = await send(api, count, prefix);
      await eventually(`${count} held`, async () => (await partnerStatusOf(api)).held === count, 30_000);
      assert.equal((await internal(api, '/partner/resume', {})).status, 200);
      return ids;
    };
    const first = await backlog(60, 'cap');
    await eventually('60 delivered', async () => (await deliveredCount(first)) === 60, 60_000);
    const atTen = posts().map((a) => a.at);
    const sentAtTen = await sentTimes(first);
    const tenSeconds = (Math.max(...atTen) - Math.min(...atTen)) / 1000;
    const limited = await runCli(['partner', 'limit', '4'], common(queue), work);
    assert.equal(limited.code, 0, limited.stderr);
    assert.deepEqual(JSON.parse(limited.stdout).max_per_second, 4);
    arrivals = [];
    const second = await backlog(20, 'cap-limited');
    await eventually('20 more delivered', async () => (await deliveredCount(second)) === 20, 60_000);
    const atFour = posts().map((a) => a.at);
    const sentAtFour = await sentTimes(second);
    const fourSeconds = (Math.max(...atFour) - Math.min(...atFour)) / 1000;
    console.log(
      `      cap: 3 workers at 10/s: 60 POSTs in ${tenSeconds.toFixed(1)} s, at most ${maxInAnySecond(sentAtTen)} sent and ${maxInAnySecond(atTen)} received in any second; ` +
        `after \`partner limit 4\`: 20 in ${fourSeconds.toFixed(1)} s, at most ${maxInAnySecond(sentAtFour)} sent and ${maxInAnySecond(atFour)} received in any second`,
    );
    // Judged on the workers' send times (each attempt's started_at): the receiving test process, busy on a
    // loaded 2-core machine, can read POSTs that were sent apart as if they came together.
    assert.ok(
      maxInAnySecond(sentAtTen) <= 13,
      `at most 13 sent in any second at 10/s, saw ${maxInAnySecond(sentAtTen)}`,
    );
    assert.ok(tenSeconds >= 5, `60 POSTs at 10/s take about 6 s, took ${tenSeconds}`);
    assert.ok(
      maxInAnySecond(sentAtFour) <= 5,
      `at most 5 sent in any second at 4/s, saw ${maxInAnySecond(sentAtFour)}`,
    );
    assert.ok(fourSeconds >= 4, `20 POSTs at 4/s take about 5 s, took ${fourSeconds}`);
  });

  it('a pause holds every delivery across a worker SIGKILL and a server restart, each held attempt unspent; resume sends them once each, oldest first', async function () {
    this.timeout(180_000);
    const queue = `pause-${randomUUID()}`;
    const api = await startApi(queue);
    const [workerA] = await Promise.all([startWorker(queue), startWorker(queue)]);
    const paused = await internal(api, '/partner/pause', { reason: 'partner maintenance' });
    assert.equal(paused.status, 200);
    const ids = await send(api, 8, 'pause');
    await eventually('8 held', async () => (await partnerStatusOf(api)).held === 8, 30_000);
    const status = (await (await internal(api, '/partner')).json()) as Record<string, unknown>;
    assert.deepEqual([status.state, status.reason, status.held], ['paused', 'partner maintenance', 8]);
    // The delivery log, the status URL and Temporal UI's attribute all say held.
    const log = (await (await internal(api, `/webhooks?status=held`)).json()) as {
      results: { webhook_id: string; status: string }[];
    };
    assert.deepEqual(log.results.map((r) => r.webhook_id).sort(), [...ids].sort());
    const view = (await (await internal(api, `/webhooks/${ids[0]}`)).json()) as {
      live: { state: string };
      held_since: string | null;
      attempts: unknown[];
    };
    assert.deepEqual([view.live.state, typeof view.held_since, view.attempts.length], ['held', 'string', 0]);
    const connection = await Connection.connect({ address: server.address });
    const client = new Client({ connection });
    try {
      await eventually(
        'WebhookStatus = held',
        async () => (await client.workflow.count(`TaskQueue = "${queue}" AND WebhookStatus = 'held'`)).count === 8,
        10_000,
      );
    } finally {
      await connection.close();
    }

    await kill(workerA.child);
    await startWorker(queue);
    server.process.kill('SIGKILL');
    await waitForExit(server.process);
    server = await startTestDevServer({ dbFilename, port: serverPort, sqlitePragmas: LOCAL_SQLITE_PRAGMAS });
    await sleep(3000);
    assert.equal(posts().length, 0, 'no POST while paused');
    assert.equal((await partnerStatusOf(api)).state, 'paused', 'the pause survived');

    const limit = await internal(api, '/partner/limit', { max_per_second: 2 });
    assert.equal(limit.status, 200);
    const resumed = await runCli(['partner', 'resume'], common(queue), work);
    assert.equal(resumed.code, 0, resumed.stderr);
    await eventually('8 delivered', async () => (await deliveredCount(ids)) === 8, 90_000);
    assert.deepEqual(
      ids.map((id) => postsOf(id).length),
      Array(8).fill(1),
      'each POSTed once',
    );
    const attempts = await db.knex('webhook_attempts').whereIn('webhook_id', ids).select('attempt');
    assert.deepEqual(
      attempts.map((a) => a.attempt),
      Array(8).fill(1),
      'the held attempt kept its number',
    );
    // Woken oldest first, batch by batch: each batch is the cap times the time since the last one, at most
    // RELEASE_CATCH_UP_MS's worth (4 at 2/s), and wakes its runs together; so a run is signalled before every
    // run accepted 4 or more places after it. (The POSTs follow them, but a run whose cached worker was killed
    // waits for Temporal's sticky timeout.)
    const historyConnection = await Connection.connect({ address: server.address });
    const histories = await Promise.all(
      ids.map(async (id) => {
        const { workflow_id: workflowId } = await db.knex('webhook_events').where({ id }).first('workflow_id');
        return new Client({ connection: historyConnection }).workflow.getHandle(workflowId).fetchHistory();
      }),
    ).finally(() => historyConnection.close());
    const signaledAt = histories.map((history) => {
      const event = (history.events ?? []).find((e) => e.workflowExecutionSignaledEventAttributes);
      return Number(event!.eventTime!.seconds) * 1000 + Math.floor((event!.eventTime!.nanos ?? 0) / 1e6);
    });
    for (let i = 0; i < 8; i++) {
      for (let j = 0; j < 8; j++) {
        if (j - i >= (2 * RELEASE_CATCH_UP_MS) / 1000)
          assert.ok(signaledAt[i] < signaledAt[j], `webhook ${i} woken before webhook ${j}`);
      }
    }
    const order = posts().map((a) => ids.indexOf(a.webhookId));
    const events = histories[0].events ?? [];
    // What a hold adds, whatever its length: one timer (the ceiling), one signal (the release), the held upsert.
    const count = (
      attributes:
        | 'timerStartedEventAttributes'
        | 'workflowExecutionSignaledEventAttributes'
        | 'upsertWorkflowSearchAttributesEventAttributes',
    ) => events.filter((e) => e[attributes]).length;
    console.log(
      `      pause: 8 held across a worker SIGKILL and a server restart, 0 POSTs while paused; after resume at 2/s, woken ${signaledAt.map((t) => ((t - signaledAt[0]) / 1000).toFixed(1)).join(' ')} s, arrival order ${order.join(' ')}; a held delivery's history: ${events.length} events, ${count('timerStartedEventAttributes')} timer, ${count('workflowExecutionSignaledEventAttributes')} signal, ${count('upsertWorkflowSearchAttributesEventAttributes')} upserts`,
    );
    assert.equal(count('timerStartedEventAttributes'), 1);
    assert.equal(count('workflowExecutionSignaledEventAttributes'), 1);
    assert.equal(count('upsertWorkflowSearchAttributesEventAttributes'), 2);
  });

  it('an outage: the breaker holds deliveries after a few failing answers, probes once per interval, and every webhook is delivered once the partner is back', async function () {
    this.timeout(180_000);
    const queue = `outage-${randomUUID()}`;
    const env = { PARTNER_BREAKER_FAILURES: '3', PARTNER_PROBE_INTERVAL_MS: '2000' };
    const api = await startApi(queue);
    await Promise.all([startWorker(queue, env), startWorker(queue, env)]);
    respond = () => ({ status: 503 });
    const began = Date.now();
    const ids = await send(api, 20, 'outage');
    // A minute: past the first retry timer (10 s) of the tripping POSTs, whose retries are held too.
    await sleep(60_000);
    const outageSeconds = (Date.now() - began) / 1000;
    const duringOutage = posts().length;
    const probes = arrivals.filter((a) => a.method === 'HEAD').length;
    const status = (await (await internal(api, '/partner')).json()) as {
      state: string;
      held: number;
      breaker: { trips: number };
    };
    assert.equal(status.state, 'tripped');
    assert.equal(status.breaker.trips, 1);
    respond = () => ({ status: 204 });
    await eventually('20 delivered', async () => (await deliveredCount(ids)) === 20, 60_000);
    const perWebhook = ids.map((id) => postsOf(id).length);
    console.log(
      `      outage: ${ids.length} webhooks, ${duringOutage} POSTs and ${probes} probes during ${outageSeconds.toFixed(0)} s of 503s (${status.held} held at the end); POSTs per webhook ${Math.min(...perWebhook)}-${Math.max(...perWebhook)}, all delivered ${((Date.now() - began) / 1000 - outageSeconds).toFixed(1)} s after the partner came back`,
    );
    assert.ok(
      duringOutage <= 3 + 2 * 10,
      `at most the tripping answers and the POSTs already in flight, saw ${duringOutage}`,
    );
    assert.ok(
      probes >= 15 && probes <= 31,
      `one probe per 2 s interval (a second guard tick late at most), saw ${probes}`,
    );
    assert.ok(perWebhook.every((n) => n <= 4));
  });

  it('a 429 with Retry-After holds every worker until then; the attempt that got it retries no earlier than the Retry-After', async function () {
    this.timeout(120_000);
    const queue = `retry-after-${randomUUID()}`;
    const api = await startApi(queue);
    await Promise.all([startWorker(queue), startWorker(queue)]);
    respond = () => ({ status: 429, headers: { 'retry-after': '15' } });
    const [first] = await send(api, 1, 'ra-first');
    await eventually('the 429', async () => posts().length === 1, 20_000);
    respond = () => ({ status: 204 });
    const throttledAt = posts()[0].at;
    const others = await send(api, 4, 'ra-others');
    await sleep(5000);
    assert.equal(posts().length, 1, 'no POST from any worker before the Retry-After');
    const status = (await (await internal(api, '/partner')).json()) as { state: string; held: number };
    assert.deepEqual([status.state, status.held], ['throttled', 4]);
    await eventually('all 5 delivered', async () => (await deliveredCount([first, ...others])) === 5, 60_000);
    const retriedAfter = (postsOf(first)[1].at - throttledAt) / 1000;
    const othersAfter = (Math.min(...others.map((id) => postsOf(id)[0].at)) - throttledAt) / 1000;
    console.log(
      `      Retry-After 15: the 429's own retry ${retriedAfter.toFixed(1)} s after it (its timer is 10 s), the held others from ${othersAfter.toFixed(1)} s`,
    );
    assert.ok(retriedAfter >= 15, `retry ${retriedAfter} s after the 429`);
    assert.ok(othersAfter >= 14.5, `others from ${othersAfter} s`);
    assert.deepEqual(
      others.map((id) => postsOf(id).length),
      [1, 1, 1, 1],
    );
  });

  it('no hold lasts forever: past PARTNER_HOLD_CEILING_MS a paused delivery goes on with its schedule', async function () {
    this.timeout(60_000);
    const queue = `ceiling-${randomUUID()}`;
    const api = await startApi(queue);
    await startWorker(queue, { PARTNER_HOLD_CEILING_MS: '4000' });
    assert.equal((await internal(api, '/partner/pause', { reason: 'forgotten pause' })).status, 200);
    const [id] = await send(api, 1, 'ceiling');
    const sentAt = Date.now();
    await sleep(2500);
    assert.equal(posts().length, 0);
    await eventually('delivered past the ceiling', async () => (await deliveredCount([id])) === 1, 30_000);
    const after = (postsOf(id)[0].at - sentAt) / 1000;
    assert.ok(after >= 3.5, `POSTed ${after} s after the start, ceiling 4 s`);
    assert.equal((await partnerStatusOf(api)).state, 'paused', 'the pause itself stays');
  });
});
