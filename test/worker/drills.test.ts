// Failure drills on a real dev server, each with the service's own worker process (`partner-service worker`):
// the worker killed while a delivery waits or mid-POST, PostgreSQL stopped and started, the Temporal server
// killed and restarted on its database file. Each checks that the schedule goes on, that the partner sees
// exactly the POSTs the schedule allows, and that every outcome is recorded.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { rm } from 'node:fs/promises';
import { Client, Connection } from '@temporalio/client';
import type { Knex } from 'knex';
import { createKnex, ensureDatabase } from '../../db/database';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../../db/embedded-postgres';
import { findFreePort } from '../../lib/ports';
import { migrateLatest } from '../../db/migrate';
import { registerDevelopmentIndexKey } from '../../store/personal-data/subject-index-keys';
import { loadConfig } from '../../lib/config';
import { createLogger } from '../../lib/logger';
import type { DevServer } from '../../temporal/dev-server';
import { acceptWebhook } from '../../application/ingestion/ingest';
import { prepareWebhook } from '../../application/ingestion/start-webhook';
import { createTemporalGateway } from '../../temporal/gateway';
import { webhookStatusQuery } from '../../workflows/webhooks/messages';
import type { DeliverySummary } from '../../workflows/types';
import companySignup from '../fixtures/events/company-signup.json';
import { startCli, waitForExit } from '../support/cli';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { eventually } from '../support/eventually';
import { gapsBetweenSends, timerDurations } from '../support/history-timing';
import { startTestDevServer, tempDir } from '../support/temporal';
import { startPartnerServer, type PartnerServer } from '../support/partner-server';
import { IN_CLEAR } from '../support/at-rest';
import { PARTNER_TOKEN } from '../support/tokens';

const PARTNER_TIMEOUT_MS = 2000;

/** How the drill partner answers one POST: a status, never ('hang'), or a status after doing something. */
type Step = number | 'hang' | (() => Promise<number>);
const logger = createLogger('silent');

describe('delivery drills on the dev server', function () {
  this.timeout(120_000);
  let work: string;
  let server: DevServer;
  let serverPort: number;
  let connection: Connection;
  let client: Client;
  let partner: PartnerServer;
  let db: TestDatabase;
  /** Per webhook-id: its POSTs' answers in order ('hang' never answers; a function runs first); the last repeats. */
  const script = new Map<string, Step[]>();
  const children: Array<ReturnType<typeof startCli>['child']> = [];

  before(async () => {
    work = await tempDir('drills');
    serverPort = await findFreePort();
    server = await startTestDevServer({ dbFilename: path.join(work, 'temporal.db'), port: serverPort });
    connection = await Connection.connect({ address: server.address });
    client = new Client({ connection });
    db = await createTestDatabase();
    const seen = new Map<string, number>();
    partner = await startPartnerServer((req, res) => {
      const id = String(req.headers['webhook-id']);
      const n = (seen.get(id) ?? 0) + 1;
      seen.set(id, n);
      const steps = script.get(id) ?? [204];
      const step = steps[Math.min(n, steps.length) - 1];
      if (step === 'hang') return;
      if (typeof step === 'number') res.writeHead(step).end();
      else void step().then((status) => res.writeHead(status).end());
    });
  });

  after(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await connection?.close();
    await partner?.close();
    await db?.drop();
    await server?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  /** The service's worker as its own process; resolves when it polls. */
  async function startWorker(taskQueue: string, databaseUrl = db.url) {
    const worker = startCli(
      ['worker'],
      {
        PATH: process.env.PATH,
        DATABASE_URL: databaseUrl,
        TEMPORAL_ADDRESS: `127.0.0.1:${serverPort}`,
        TEMPORAL_TASK_QUEUE: taskQueue,
        PARTNER_ENDPOINT: partner.url,
        PARTNER_ACCESS_TOKEN: PARTNER_TOKEN,
        PARTNER_TIMEOUT_MS: String(PARTNER_TIMEOUT_MS),
        WORKER_HTTP_PORT: String(await findFreePort()),
        LOG_LEVEL: 'info',
      },
      work,
      /webhook worker polling/,
    );
    children.push(worker.child);
    await worker.started;
    return worker.child;
  }

  async function submit(knex: Knex, taskQueue: string, steps: Step[]) {
    const prepared = prepareWebhook({ ...companySignup, event_id: `drill-${randomUUID()}` }, PARTNER_TIMEOUT_MS);
    script.set(prepared.webhookId, steps);
    const gateway = createTemporalGateway(
      loadConfig({ TEMPORAL_ADDRESS: server.address, TEMPORAL_TASK_QUEUE: taskQueue }),
      logger,
    );
    try {
      await acceptWebhook(knex, IN_CLEAR, gateway, prepared);
    } finally {
      await gateway.close();
    }
    return { ...prepared, handle: client.workflow.getHandle(prepared.workflowId) };
  }

  const postsOf = (webhookId: string) => partner.requests.filter((r) => r.headers['webhook-id'] === webhookId).length;
  const waitingAfter = (handle: ReturnType<Client['workflow']['getHandle']>, attempts: number) =>
    eventually(`waiting after attempt ${attempts}`, async () => {
      const status = await handle.query(webhookStatusQuery);
      return status.state === 'waiting' && status.attempts.length === attempts;
    });
  const kill = async (child: ReturnType<typeof startCli>['child']) => {
    child.kill('SIGKILL');
    await waitForExit(child);
  };
  const attemptRows = (knex: Knex, webhookId: string) =>
    knex('webhook_attempts')
      .where({ webhook_id: webhookId })
      .orderBy('attempt')
      .select('attempt', 'http_status', 'error_class', 'succeeded');

  it('worker killed (SIGKILL) while a delivery waits on its 10 s timer: a new worker goes on with the schedule', async () => {
    const queue = `drill-timer-${randomUUID()}`;
    const first = await startWorker(queue);
    const webhook = await submit(db.knex, queue, [500, 204]);
    await waitingAfter(webhook.handle, 1);
    await kill(first);
    await startWorker(queue);
    const summary: DeliverySummary = await webhook.handle.result();
    assert.equal(summary.status, 'delivered');
    assert.equal(postsOf(webhook.webhookId), 2);
    const history = await webhook.handle.fetchHistory();
    assert.deepEqual(timerDurations(history), [10_000]);
    // The timer fires on time; its workflow task first goes to the dead worker's sticky queue, and after the
    // sticky schedule-to-start timeout (10 s) to the new worker: a crash can make the retry up to 10 s late.
    const [gap] = gapsBetweenSends(history);
    assert.ok(gap >= 10_000 && gap < 22_000, `second POST ${gap} ms after the first`);
    await eventually(
      'the outcome row',
      async () => (await db.knex('webhook_events').where({ id: webhook.webhookId }).first()).status === 'delivered',
    );
    assert.deepEqual(await attemptRows(db.knex, webhook.webhookId), [
      { attempt: 1, http_status: 500, error_class: null, succeeded: false },
      { attempt: 2, http_status: 204, error_class: null, succeeded: true },
    ]);
  });

  it('worker killed mid-POST: that attempt is lost (a timeout), and the schedule goes on', async () => {
    const queue = `drill-post-${randomUUID()}`;
    const first = await startWorker(queue);
    const webhook = await submit(db.knex, queue, ['hang', 204]);
    await eventually('the first POST', async () => postsOf(webhook.webhookId) === 1);
    await kill(first);
    await startWorker(queue);
    // The server times the lost attempt out (HTTP timeout plus margin), then waits 10 s.
    const summary: DeliverySummary = await webhook.handle.result();
    assert.equal(summary.status, 'delivered');
    assert.deepEqual(
      summary.attempts.map((a) => [a.httpStatus, a.errorClass]),
      [
        [null, 'timeout'],
        [204, null],
      ],
    );
    assert.equal(postsOf(webhook.webhookId), 2);
    await eventually(
      'the outcome row',
      async () => (await db.knex('webhook_events').where({ id: webhook.webhookId }).first()).status === 'delivered',
    );
    assert.deepEqual(await attemptRows(db.knex, webhook.webhookId), [
      { attempt: 1, http_status: null, error_class: 'timeout', succeeded: false },
      { attempt: 2, http_status: 204, error_class: null, succeeded: true },
    ]);
  });

  /** A PostgreSQL of the drill's own, to stop and start again on the same port and data. */
  async function drillPostgres(name: string) {
    const dataDir = path.join(work, name);
    let postgres: EmbeddedPostgresHandle = await startEmbeddedPostgres(dataDir);
    const port = postgres.port;
    const url = await ensureDatabase(postgres.url, 'drill');
    const pg = {
      url,
      knex: createKnex(url),
      async stop() {
        await pg.knex.destroy();
        await postgres.stop();
      },
      async start() {
        postgres = await startEmbeddedPostgres(dataDir, undefined, { port });
        pg.knex = createKnex(url);
      },
    };
    await migrateLatest(pg.knex);
    // A development deployment, as every test database is (test/support/global-fixtures.ts).
    await registerDevelopmentIndexKey(pg.knex);
    return pg;
  }

  it('PostgreSQL stopped after a POST got its answer and before its record: recorded once it is back, never POSTed again', async () => {
    const queue = `drill-pg-record-${randomUUID()}`;
    const pg = await drillPostgres('pg-record');
    try {
      await startWorker(queue, pg.url);
      const stoppedBeforeAnswering = async () => {
        await pg.stop();
        return 204;
      };
      const webhook = await submit(pg.knex, queue, [500, stoppedBeforeAnswering]);
      await eventually('the second POST', async () => postsOf(webhook.webhookId) === 2);
      // The attempt's own record fails; the workflow hands it to the retried record activities.
      await new Promise((r) => setTimeout(r, 3000));
      await pg.start();
      const summary: DeliverySummary = await webhook.handle.result();
      assert.equal(summary.status, 'delivered');
      await eventually(
        'the outcome row',
        async () => (await pg.knex('webhook_events').where({ id: webhook.webhookId }).first()).status === 'delivered',
        90_000,
      );
      assert.deepEqual(await attemptRows(pg.knex, webhook.webhookId), [
        { attempt: 1, http_status: 500, error_class: null, succeeded: false },
        { attempt: 2, http_status: 204, error_class: null, succeeded: true },
      ]);
      assert.equal(postsOf(webhook.webhookId), 2);
      const activities = (await webhook.handle.fetchHistory())
        .events!.filter((e) => e.activityTaskScheduledEventAttributes)
        .map((e) => e.activityTaskScheduledEventAttributes!.activityType!.name);
      assert.deepEqual(
        activities,
        ['recordAttempt', 'recordOutcome'],
        'only the record that failed went to the record activities',
      );
    } finally {
      await pg.stop().catch(() => undefined);
    }
  });

  it('PostgreSQL down when an attempt is due: the attempt waits for it (nothing POSTed unclaimed), then goes out once', async () => {
    const queue = `drill-pg-claim-${randomUUID()}`;
    const pg = await drillPostgres('pg-claim');
    try {
      await startWorker(queue, pg.url);
      const webhook = await submit(pg.knex, queue, [500, 204]);
      await eventually('the first record', async () => (await attemptRows(pg.knex, webhook.webhookId)).length === 1);
      await pg.stop();
      // Past the 10 s timer: attempt 2 cannot be claimed, so it is not POSTed.
      await new Promise((r) => setTimeout(r, 14_000));
      assert.equal(postsOf(webhook.webhookId), 1);
      await pg.start();
      const summary: DeliverySummary = await webhook.handle.result();
      assert.equal(summary.status, 'delivered');
      assert.equal(postsOf(webhook.webhookId), 2);
      assert.deepEqual(await attemptRows(pg.knex, webhook.webhookId), [
        { attempt: 1, http_status: 500, error_class: null, succeeded: false },
        { attempt: 2, http_status: 204, error_class: null, succeeded: true },
      ]);
      assert.equal((await pg.knex('webhook_events').where({ id: webhook.webhookId }).first()).status, 'delivered');
    } finally {
      await pg.stop().catch(() => undefined);
    }
  });

  it('Temporal server killed (SIGKILL) and restarted on its database file while a delivery waits: it still completes', async () => {
    const queue = `drill-server-${randomUUID()}`;
    await startWorker(queue);
    const webhook = await submit(db.knex, queue, [500, 204]);
    await waitingAfter(webhook.handle, 1);
    server.process.kill('SIGKILL');
    await waitForExit(server.process);
    server = await startTestDevServer({ dbFilename: path.join(work, 'temporal.db'), port: serverPort });
    const summary: DeliverySummary = await webhook.handle.result();
    assert.equal(summary.status, 'delivered');
    assert.equal(postsOf(webhook.webhookId), 2);
    await eventually(
      'the outcome row',
      async () => (await db.knex('webhook_events').where({ id: webhook.webhookId }).first()).status === 'delivered',
    );
  });
});
