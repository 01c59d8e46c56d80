// WORKER_BUILD_ID on a real dev server: the service's workers poll as a Worker Deployment Version, a delivery
// stays pinned to the build it started on after a newer build becomes current (its retry-now included), and new
// deliveries go to the current build: the deploy procedure of docs/webhooks.md, steps 1 and 2.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { NativeConnection } from '@temporalio/worker';
import { acceptWebhook } from '../../application/ingestion/ingest';
import { prepareWebhook } from '../../application/ingestion/start-webhook';
import { createTemporalGateway, type TemporalGateway } from '../../temporal/gateway';
import { loadConfig, type Config } from '../../lib/config';
import { createLogger } from '../../lib/logger';
import type { DevServer } from '../../temporal/dev-server';
import jobNew from '../fixtures/events/job-new.json';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { eventually } from '../support/eventually';
import { startTestDevServer, startTestWorker, type TestWorker } from '../support/temporal';
import { startPartnerServer, type PartnerServer } from '../support/partner-server';
import { IN_CLEAR } from '../support/at-rest';
import { PARTNER_TOKEN } from '../support/tokens';

const { RoutingConfigUpdateState, VersioningBehavior } = temporal.api.enums.v1;
const DEPLOYMENT = 'partner-webhooks-test';

describe('worker versioning (WORKER_BUILD_ID)', function () {
  this.timeout(300_000);
  const logger = createLogger('silent');
  let server: DevServer;
  let db: TestDatabase;
  let partner: PartnerServer;
  let connection: Connection;
  let client: Client;
  let gateway: TemporalGateway;
  const natives: NativeConnection[] = [];
  const workers: TestWorker[] = [];
  let env: Record<string, string>;
  /** Event ids whose first POST the partner fails: their delivery then waits for its retry. */
  const failFirst = new Set<string>();

  before(async () => {
    server = await startTestDevServer();
    db = await createTestDatabase();
    partner = await startPartnerServer((_req, res, body) => {
      const eventId = String(JSON.parse(body).data?.job?.id ?? '');
      const first = failFirst.delete(eventId);
      res.writeHead(first ? 500 : 204);
      res.end();
    });
    env = {
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_TASK_QUEUE: `test-${randomUUID()}`,
      PARTNER_ENDPOINT: partner.url,
      PARTNER_ACCESS_TOKEN: PARTNER_TOKEN,
      PARTNER_TIMEOUT_MS: '2000',
      WORKER_DEPLOYMENT_NAME: DEPLOYMENT,
    };
    gateway = createTemporalGateway(loadConfig(env), logger);
    connection = await Connection.connect({ address: server.address });
    client = new Client({ connection });
  });

  after(async () => {
    for (const worker of workers) await worker.stop();
    for (const native of natives) await native.close();
    await gateway?.close();
    await connection?.close();
    await partner?.close();
    await db?.drop();
    await server?.stop();
  });

  async function startBuild(buildId: string): Promise<Config> {
    const config = loadConfig({ ...env, WORKER_BUILD_ID: buildId });
    const native = await NativeConnection.connect({ address: server.address });
    natives.push(native);
    workers.push(await startTestWorker({ config, knex: db.knex, logger }, native));
    return config;
  }

  /**
   * `temporal worker deployment set-current-version`, retried until the server knows the build's task queues,
   * then until the new routing has reached every task queue: before that, a new run may still go to the old build.
   */
  async function setCurrent(buildId: string): Promise<void> {
    await eventually(
      `build ${buildId} to become current`,
      async () => {
        try {
          await connection.workflowService.setWorkerDeploymentCurrentVersion({
            namespace: 'default',
            deploymentName: DEPLOYMENT,
            buildId,
            identity: 'worker-versioning.test',
          });
          return true;
        } catch {
          return false;
        }
      },
      30_000,
    );
    await eventually(
      `the routing to build ${buildId} to propagate`,
      async () => {
        const { workerDeploymentInfo: info } = await connection.workflowService.describeWorkerDeployment({
          namespace: 'default',
          deploymentName: DEPLOYMENT,
        });
        return (
          info?.routingConfig?.currentDeploymentVersion?.buildId === buildId &&
          info.routingConfigUpdateState === RoutingConfigUpdateState.ROUTING_CONFIG_UPDATE_STATE_COMPLETED
        );
        // The server propagates the routing with workflows of its own: on a loaded machine (the parallel lanes of
        // npm test) that takes longer than 30 s.
      },
      90_000,
    );
  }

  const deliver = async (jobId: string) => {
    const event = {
      ...jobNew,
      event_id: `versioning-${randomUUID()}`,
      data: { ...jobNew.data, job: { ...jobNew.data.job, id: jobId } },
    };
    return acceptWebhook(db.knex, IN_CLEAR, gateway, prepareWebhook(event));
  };

  const statusOf = async (webhookId: string) =>
    (await db.knex('webhook_events').where({ id: webhookId }).first('status')).status as string;

  /**
   * The run's versioning, once a workflow task has completed: the attempt's rows are written inside the task, so
   * they can be seen before the server has recorded which build completed it.
   */
  const versioningOf = async (workflowId: string) => {
    const read = async () =>
      (await client.workflow.getHandle(workflowId).describe()).raw.workflowExecutionInfo?.versioningInfo;
    await eventually(`the versioning of ${workflowId}`, async () => Boolean((await read())?.deploymentVersion), 10_000);
    const info = await read();
    return {
      behavior: info?.behavior,
      deployment: info?.deploymentVersion?.deploymentName,
      buildId: info?.deploymentVersion?.buildId,
    };
  };

  /** The build of every worker that completed a workflow task of the run, once the run has completed. */
  const buildsThatRan = async (workflowId: string) => {
    await client.workflow.getHandle(workflowId).result();
    const history = await client.workflow.getHandle(workflowId).fetchHistory();
    return [
      ...new Set(
        (history.events ?? []).flatMap((e) =>
          e.workflowTaskCompletedEventAttributes
            ? [e.workflowTaskCompletedEventAttributes.deploymentVersion?.buildId]
            : [],
        ),
      ),
    ];
  };

  it('takes no new delivery until its build is the current version, then runs it pinned to that build', async () => {
    await startBuild('b1');
    const early = await deliver(`job-${randomUUID()}`);
    assert.equal(early.started, true);
    // The start is accepted; the delivery waits in Temporal, its first workflow task scheduled for no poller.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    assert.equal((await db.knex('webhook_attempts').where({ webhook_id: early.webhookId })).length, 0);
    await setCurrent('b1');
    await eventually(
      'the held delivery delivered once b1 is current',
      async () => (await statusOf(early.webhookId)) === 'delivered',
    );
    assert.deepEqual(await versioningOf(early.workflowId), {
      behavior: VersioningBehavior.VERSIONING_BEHAVIOR_PINNED,
      deployment: DEPLOYMENT,
      buildId: 'b1',
    });
  });

  it('pins a delivery to the build it started on, through a newer current build and a retry-now, and starts new ones on the current build', async () => {
    const waitingJob = `job-${randomUUID()}`;
    failFirst.add(waitingJob);
    const onB1 = await deliver(waitingJob);
    assert.equal(onB1.started, true);
    await eventually(
      'the first attempt failed and the delivery waits',
      async () => (await db.knex('webhook_attempts').where({ webhook_id: onB1.webhookId })).length === 1,
    );
    assert.deepEqual(await versioningOf(onB1.workflowId), {
      behavior: VersioningBehavior.VERSIONING_BEHAVIOR_PINNED,
      deployment: DEPLOYMENT,
      buildId: 'b1',
    });

    // Deploy b2 beside b1 and make it current.
    await startBuild('b2');
    await setCurrent('b2');
    const onB2 = await deliver(`job-${randomUUID()}`);
    await eventually('the new delivery delivered', async () => (await statusOf(onB2.webhookId)) === 'delivered');
    assert.deepEqual(await versioningOf(onB2.workflowId), {
      behavior: VersioningBehavior.VERSIONING_BEHAVIOR_PINNED,
      deployment: DEPLOYMENT,
      buildId: 'b2',
    });
    assert.deepEqual(await buildsThatRan(onB2.workflowId), ['b2']);

    // The run started on b1 stays there: its retry-now is handled and sent by b1's workers.
    assert.deepEqual(await gateway.retryNow(onB1.workflowId), { attempt: 2 });
    await eventually(
      'the pinned delivery delivered on its second attempt',
      async () => (await statusOf(onB1.webhookId)) === 'delivered',
    );
    assert.deepEqual(await versioningOf(onB1.workflowId), {
      behavior: VersioningBehavior.VERSIONING_BEHAVIOR_PINNED,
      deployment: DEPLOYMENT,
      buildId: 'b1',
    });
    assert.deepEqual(await buildsThatRan(onB1.workflowId), ['b1']);
  });
});
