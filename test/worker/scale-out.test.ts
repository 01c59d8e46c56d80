// Scale-out under faults on a real dev server, with the service's own processes (`partner-service api` and
// `partner-service worker`, two of each on one task queue): 2,000 webhooks ingested through both APIs while a
// worker is SIGKILLed and the Temporal server is killed and restarted on its database file. Then the drain of
// a worker on SIGTERM under load. Each checks what the partner received, PostgreSQL's rows and Temporal's runs.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { findFreePort } from '../../lib/ports';
import { loadConfig } from '../../lib/config';
import { createLogger } from '../../lib/logger';
import type { DevServer } from '../../temporal/dev-server';
import { LOCAL_SQLITE_PRAGMAS } from '../../temporal/local-temporal';
import { acceptWebhook } from '../../application/ingestion/ingest';
import { prepareWebhook } from '../../application/ingestion/start-webhook';
import { createTemporalGateway } from '../../temporal/gateway';
import { DRAIN_RETRY_DELAY_MS } from '../../activities/webhooks/delivery';
import companySignup from '../fixtures/events/company-signup.json';
import { withOwnEntity } from '../support/own-entity';
import { waitForExit } from '../support/cli';
import { serviceProcesses, stopServiceFixtures } from '../support/service-processes';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { eventually } from '../support/eventually';
import { waitForRunsCompleted } from '../support/runs-completed';
import { startTestDevServer, tempDir } from '../support/temporal';
import { startPartnerServer, type PartnerServer } from '../support/partner-server';
import { IN_CLEAR } from '../support/at-rest';
import { postWebhook } from '../support/api';
import { INTERNAL_TOKEN, PARTNER_TOKEN } from '../support/tokens';

describe('scale-out on the dev server: two APIs, two workers, one task queue', function () {
  let work: string;
  let dbFilename: string;
  let server: DevServer;
  let serverPort: number;
  let partner: PartnerServer;
  let db: TestDatabase;

  /** What the partner saw, per webhook-id: every POST's arrival, and the POSTs received but not answered yet. */
  let posts: Map<string, number[]>;
  let inFlight: Map<string, number>;
  /** How long the partner takes to answer, and a gate it waits on before answering (open unless a test shuts it). */
  let answerDelayMs: (n: number) => number;
  let gate: Promise<void>;

  before(async function () {
    this.timeout(60_000);
    work = await tempDir('scale-out');
    dbFilename = path.join(work, 'temporal.db');
    serverPort = await findFreePort();
    server = await startTestDevServer({ dbFilename, port: serverPort, sqlitePragmas: LOCAL_SQLITE_PRAGMAS });
    db = await createTestDatabase();
    partner = await startPartnerServer((req, res) => {
      const id = String(req.headers['webhook-id']);
      const arrivals = posts.get(id) ?? [];
      arrivals.push(Date.now());
      posts.set(id, arrivals);
      inFlight.set(id, (inFlight.get(id) ?? 0) + 1);
      const done = () => {
        const left = (inFlight.get(id) ?? 1) - 1;
        if (left === 0) inFlight.delete(id);
        else inFlight.set(id, left);
      };
      // 'close' also covers a client that went away (a killed worker) before the answer.
      res.once('close', done);
      const delay = answerDelayMs(countPosts());
      void new Promise((r) => setTimeout(r, delay)).then(() => gate).then(() => res.writeHead(200).end());
    });
  });

  beforeEach(() => {
    posts = new Map();
    inFlight = new Map();
    answerDelayMs = () => 0;
    gate = Promise.resolve();
    partner.requests.length = 0;
  });

  after(async function () {
    this.timeout(60_000);
    await stopServiceFixtures(processes, { partner, db, server, work });
  });

  const countPosts = () => [...posts.values()].reduce((n, a) => n + a.length, 0);
  const processes = serviceProcesses(
    () => ({ work, databaseUrl: db.url, temporalPort: serverPort, partnerUrl: partner.url }),
    {
      INTERNAL_API_TOKEN: INTERNAL_TOKEN,
      PARTNER_ACCESS_TOKEN: PARTNER_TOKEN,
      PARTNER_TIMEOUT_MS: '5000',
    },
  );
  const { startWorker, startApi, kill } = processes;

  it('2,000 webhooks through 2 APIs and 2 workers, a worker SIGKILLed and the server restarted: each delivered, repeats only of POSTs in flight at a kill', async function () {
    this.timeout(240_000);
    const TOTAL = 2000;
    const CONCURRENCY = 32;
    const began = Date.now();
    const queue = `scale-${randomUUID()}`;
    const [apiA, apiB] = await Promise.all([startApi(queue), startApi(queue)]);
    const [workerA] = await Promise.all([startWorker(queue), startWorker(queue)]);

    // Ingestion: each webhook to one of the two APIs; a 503 (Temporal down) is retried with the same event_id.
    const events = Array.from({ length: TOTAL }, (_, i) =>
      withOwnEntity({ ...companySignup, event_id: `scale-${i}-${randomUUID()}` }),
    );
    const webhookIds = new Set<string>();
    let retried503 = 0;
    async function ingest(base: string, event: object) {
      for (let tries = 1; ; tries++) {
        const response = await postWebhook(base, INTERNAL_TOKEN, event);
        const body = (await response.json()) as { webhook_id: string };
        if (response.status === 503 && tries < 200) {
          retried503++;
          await new Promise((r) => setTimeout(r, 250));
          continue;
        }
        assert.equal(response.status, 202, JSON.stringify(body));
        webhookIds.add(body.webhook_id);
        return;
      }
    }
    const ingestRange = (from: number, to: number) => {
      let next = from;
      return Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < to) {
            const i = next++;
            await ingest(i % 2 === 0 ? apiA : apiB, events[i]);
          }
        }),
      );
    };
    // The last ones go in only after the server's restart: both APIs must have reconnected by themselves.
    const AFTER_RESTART = 100;
    let ingestSeconds = NaN;
    const failedIngestion = ingestRange(0, TOTAL - AFTER_RESTART).then(
      () => void (ingestSeconds = (Date.now() - began) / 1000),
      (error: unknown) => (error instanceof Error ? error : new Error(String(error))),
    );

    // The faults. At each kill: the POSTs the partner has received and not answered, and (after the killed
    // process is gone) those whose outcome PostgreSQL has not recorded: the service may POST only these again.
    const inFlightAtKill = new Set<string>();
    const unrecordedAtKill = new Set<string>();
    async function noteKill(killing: () => Promise<void>) {
      for (const id of inFlight.keys()) inFlightAtKill.add(id);
      await killing();
      // Let the partner read what the dead process had sent already.
      await new Promise((r) => setTimeout(r, 200));
      const received = [...posts.keys()];
      const recorded = new Set(
        (await db.knex('webhook_attempts').whereIn('webhook_id', received).distinct('webhook_id')).map(
          (r) => r.webhook_id as string,
        ),
      );
      for (const id of received) if (!recorded.has(id)) unrecordedAtKill.add(id);
    }
    const distinctDelivered = () => posts.size;
    await eventually('some hundreds delivered', async () => distinctDelivered() >= 400, 120_000);
    const acceptedAtKills = [webhookIds.size];
    await noteKill(() => kill(workerA.child));
    await eventually('more delivered by the surviving worker', async () => distinctDelivered() >= 900, 120_000);
    acceptedAtKills.push(webhookIds.size);
    await noteKill(async () => {
      server.process.kill('SIGKILL');
      await waitForExit(server.process);
    });
    server = await startTestDevServer({ dbFilename, port: serverPort, sqlitePragmas: LOCAL_SQLITE_PRAGMAS });

    const restartedAt = Date.now();
    const ingestError = await failedIngestion;
    if (ingestError) throw ingestError;
    await ingestRange(TOTAL - AFTER_RESTART, TOTAL);
    const lateIngestSeconds = (Date.now() - restartedAt) / 1000;
    assert.equal(webhookIds.size, TOTAL);
    await eventually('every webhook at the partner', async () => [...webhookIds].every((id) => posts.has(id)), 150_000);
    await eventually(
      'every row delivered',
      async () => {
        const [{ count }] = await db
          .knex('webhook_events')
          .whereIn('id', [...webhookIds])
          .where({ status: 'delivered' })
          .count({ count: '*' });
        return Number(count) === TOTAL;
      },
      60_000,
    );
    const connection = await Connection.connect({ address: server.address });
    try {
      const client = new Client({ connection });
      const runs = await db
        .knex('webhook_events')
        .whereIn('id', [...webhookIds])
        .pluck('workflow_id');
      await waitForRunsCompleted(client, queue, runs, 120_000);
    } finally {
      await connection.close();
    }

    assert.deepEqual(
      [...posts.keys()].filter((id) => !webhookIds.has(id)),
      [],
      'no POST of an unknown webhook',
    );
    const repeated = [...posts].filter(([, arrivals]) => arrivals.length > 1).map(([id]) => id);
    const mayRepeat = new Set([...inFlightAtKill, ...unrecordedAtKill]);
    assert.deepEqual(
      repeated.filter((id) => !mayRepeat.has(id)),
      [],
      'repeats of POSTs not in flight at a kill',
    );
    assert.ok(
      [...posts.values()].every((arrivals) => arrivals.length <= 2),
      'no webhook POSTed three times',
    );
    // A repeat is the next attempt after a lost one: attempt 1 recorded lost (a timeout), attempt 2 delivered.
    for (const id of repeated) {
      const attempts = await db
        .knex('webhook_attempts')
        .where({ webhook_id: id })
        .orderBy('attempt')
        .select('attempt', 'error_class', 'succeeded');
      assert.deepEqual(
        attempts,
        [
          { attempt: 1, error_class: 'timeout', succeeded: false },
          { attempt: 2, error_class: null, succeeded: true },
        ],
        id,
      );
    }
    const wallSeconds = (Date.now() - began) / 1000;
    console.log(
      `      scale-out: ${TOTAL} delivered, ${repeated.length} repeated (in flight at the kills: ${inFlightAtKill.size} at the partner, ${unrecordedAtKill.size} unrecorded), ${retried503} API 503 retries (accepted at the kills: ${acceptedAtKills.join(', ')}; the first ${TOTAL - AFTER_RESTART} in by ${ingestSeconds.toFixed(1)} s, the last ${AFTER_RESTART} within ${lateIngestSeconds.toFixed(1)} s of the restart), ${wallSeconds.toFixed(1)} s`,
    );
  });

  it('SIGTERM under load: the worker finishes the POSTs in flight, starts none, exits 0 in its grace time; a second worker delivers the rest once each', async function () {
    this.timeout(180_000);
    const TOTAL = 40;
    const SLOTS = 8;
    // Well above the longest a held answer waits (the gate below, a few seconds): a POST that timed out would
    // free its slot before SIGTERM, and the POST taking it could reach the partner just after the signal.
    const PARTNER_TIMEOUT_MS = 15_000;
    const GRACE_MS = PARTNER_TIMEOUT_MS + 5000; // shutdownGraceTime of worker/webhook-worker.ts
    const queue = `drain-${randomUUID()}`;
    // A slow partner: 1 to 2 s per POST.
    answerDelayMs = (n) => 1000 + (n % 5) * 250;
    const first = await startWorker(queue, {
      PARTNER_TIMEOUT_MS: String(PARTNER_TIMEOUT_MS),
      PARTNER_MAX_CONCURRENCY: String(SLOTS),
    });
    const gateway = createTemporalGateway(
      loadConfig({ TEMPORAL_ADDRESS: server.address, TEMPORAL_TASK_QUEUE: queue }),
      createLogger('silent'),
    );
    const ids: string[] = [];
    try {
      for (let i = 0; i < TOTAL; i++) {
        const prepared = prepareWebhook(
          withOwnEntity({ ...companySignup, event_id: `drain-${i}-${randomUUID()}` }),
          PARTNER_TIMEOUT_MS,
        );
        await acceptWebhook(db.knex, IN_CLEAR, gateway, prepared);
        ids.push(prepared.webhookId);
      }
    } finally {
      await gateway.close();
    }
    const answered = () => [...posts.keys()].filter((id) => !inFlight.has(id)).length;
    await eventually('some delivered', async () => answered() >= SLOTS, 60_000);
    // Hold the answers across the signal: with every slot busy, the worker can start a POST only after an
    // answer, so any POST that arrives after SIGTERM was started while draining.
    let open!: () => void;
    gate = new Promise((r) => (open = r));
    await eventually('every slot in flight', async () => inFlight.size === SLOTS, 30_000);
    const inFlightAtSigterm = [...inFlight.keys()];
    const postsBefore = countPosts();
    const sigtermAt = Date.now();
    first.child.kill('SIGTERM');
    await eventually('the worker draining', async () => /"msg":"shutting down"/.test(first.output.stdout), 10_000);
    open();
    const code = await waitForExit(first.child);
    const exitMs = Date.now() - sigtermAt;
    assert.equal(code, 0, first.output.stderr);
    assert.ok(exitMs < GRACE_MS, `exited ${exitMs} ms after SIGTERM`);
    const startedAfter = [...posts.values()].flat().filter((t) => t >= sigtermAt).length;
    assert.equal(startedAfter, 0, 'POSTs started after SIGTERM');
    assert.equal(countPosts(), postsBefore);
    // Each POST in flight at SIGTERM got its answer recorded by the draining worker.
    const drained = await db
      .knex('webhook_attempts')
      .whereIn('webhook_id', inFlightAtSigterm)
      .orderBy('webhook_id')
      .select('webhook_id', 'attempt', 'http_status', 'succeeded');
    assert.deepEqual(
      drained,
      [...inFlightAtSigterm].sort().map((id) => ({ webhook_id: id, attempt: 1, http_status: 200, succeeded: true })),
    );
    const deliveredByFirst = posts.size;

    const secondAt = Date.now();
    await startWorker(queue, {
      PARTNER_TIMEOUT_MS: String(PARTNER_TIMEOUT_MS),
      PARTNER_MAX_CONCURRENCY: String(SLOTS),
    });
    // The attempts the draining worker gave back wait DRAIN_RETRY_DELAY_MS on a durable timer.
    await eventually(
      'every row delivered',
      async () => {
        const [{ count }] = await db
          .knex('webhook_events')
          .whereIn('id', ids)
          .where({ status: 'delivered' })
          .count({ count: '*' });
        return Number(count) === TOTAL;
      },
      DRAIN_RETRY_DELAY_MS + 60_000,
    );
    assert.deepEqual([...posts.keys()].sort(), [...ids].sort());
    assert.deepEqual(
      [...posts.values()].filter((arrivals) => arrivals.length !== 1),
      [],
      'a webhook POSTed twice',
    );
    const attempts = await db
      .knex('webhook_attempts')
      .whereIn('webhook_id', ids)
      .select('attempt', 'http_status', 'succeeded');
    assert.equal(attempts.length, TOTAL);
    assert.ok(attempts.every((a) => a.attempt === 1 && a.http_status === 200 && a.succeeded === true));
    console.log(
      `      drain: ${inFlightAtSigterm.length} in flight at SIGTERM, all recorded; exit 0 after ${exitMs} ms (grace ${GRACE_MS} ms); ${deliveredByFirst} delivered by the first worker, ${TOTAL - deliveredByFirst} by the second in ${((Date.now() - secondAt) / 1000).toFixed(1)} s; no repeats`,
    );
  });
});
