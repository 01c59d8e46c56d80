// The whole path on a real `temporal server start-dev`: ingestion API, workflow, partner, PostgreSQL rows and
// Temporal visibility by search attribute. The server starts bare: the service registers its attributes.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { startApiServer, type ApiServer } from '../../api/server';
import { findFreePort } from '../../lib/ports';
import type { Config } from '../../lib/config';
import { createLogger } from '../../lib/logger';
import type { DevServer } from '../../temporal/dev-server';
import { WEBHOOK_SEARCH_ATTRIBUTES } from '../../temporal/search-attributes';
import { createTemporalGateway } from '../../temporal/gateway';
import { prepareWebhook, startWebhook } from '../../application/ingestion/start-webhook';
import type { WebhookEventInput } from '../../events/envelope';
import { webhookStatusQuery } from '../../workflows/webhooks/messages';
import type { DeliverySummary } from '../../workflows/types';
import candidateNew from '../fixtures/events/candidate-new.json';
import { runCli } from '../support/cli';
import type { TestDatabase } from '../support/database';
import { eventually } from '../support/eventually';
import { encodedHistoryBytes, occurrencesIn } from '../support/history';
import { tempDir } from '../support/temporal';
import { startWebhookStack, type WebhookStack } from '../support/webhook-stack';
import type { PartnerServer } from '../support/partner-server';
import { logLines } from '../support/log-lines';
import { postWebhook } from '../support/api';
import { INTERNAL_TOKEN, PARTNER_TOKEN } from '../support/tokens';

describe('webhooks end to end on the Temporal dev server', function () {
  this.timeout(60_000);
  let stack: WebhookStack;
  let server: DevServer;
  let db: TestDatabase;
  let partner: PartnerServer;
  let config: Config;
  let api: ApiServer;
  let connection: Connection;
  let client: Client;
  /** The dev server cannot skip time: on this queue every timer is 1000 times shorter, so a delivery fails
   * all four attempts in about a second while the workflow still commands 10 s, 100 s and 1000 s. */
  let compressedQueue: string;
  /** Partner answers by webhook-id; unknown ids get 204. */
  const answers = new Map<string, number>();
  const logger = createLogger('silent');

  before(async () => {
    stack = await startWebhookStack({
      env: { PARTNER_ACCESS_TOKEN: PARTNER_TOKEN, INTERNAL_API_TOKEN: INTERNAL_TOKEN },
      partnerHandler: (req, res) => res.writeHead(answers.get(String(req.headers['webhook-id'])) ?? 204).end(),
      compressedQueue: true,
    });
    ({ server, db, partner, config, api, connection, client, compressedQueue } = stack);
  });

  after(() => stack?.close());

  beforeEach(() => {
    partner.requests.length = 0;
  });

  const submit = async (event: object, url = api.url) => {
    const response = await postWebhook(url, INTERNAL_TOKEN, event);
    return { status: response.status, body: (await response.json()) as Record<string, string> };
  };
  const candidateOf = (companyId: string, fields: Record<string, unknown> = {}) => {
    const event = structuredClone(candidateNew);
    event.event_id = `dev-${randomUUID()}`;
    event.data.company.id = companyId;
    // A candidate of its own: per-entity ordering would queue one candidate's webhooks behind its waiting one.
    Object.assign(event.data.candidate, { id: `c-${randomUUID()}` }, fields);
    return event;
  };
  const webhookIdsWhere = async (query: string) => {
    const ids: string[] = [];
    for await (const execution of client.workflow.list({ query })) ids.push(execution.workflowId);
    return ids.sort();
  };
  const customAttributes = async () =>
    (await connection.operatorService.listSearchAttributes({ namespace: 'default' })).customAttributes ?? {};

  it('registers its four Keyword search attributes on a bare dev server, then accepts the webhook', async () => {
    const before = await customAttributes();
    assert.deepEqual(
      WEBHOOK_SEARCH_ATTRIBUTES.filter((key) => key.name in before),
      [],
    );
    const accepted = await submit(candidateOf('acme'));
    assert.equal(accepted.status, 202);
    const after = await customAttributes();
    const keyword = temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
    assert.deepEqual(Object.fromEntries(WEBHOOK_SEARCH_ATTRIBUTES.map((key) => [key.name, after[key.name]])), {
      WebhookEventType: keyword,
      WebhookAction: keyword,
      WebhookStatus: keyword,
      CompanyId: keyword,
    });
    await client.workflow.getHandle(accepted.body.workflow_id).result();
  });

  it('delivers through the API: 202, one POST with the token, rows in PostgreSQL, no token in the history', async () => {
    const event = candidateOf('acme');
    const accepted = await submit(event);
    assert.equal(accepted.status, 202);
    assert.equal(accepted.body.workflow_id, `webhook-candidate-new-${event.event_id}`);
    const handle = client.workflow.getHandle(accepted.body.workflow_id);
    const summary: DeliverySummary = await handle.result();
    assert.equal(summary.status, 'delivered');
    assert.equal(partner.requests.length, 1);
    const [request] = partner.requests;
    assert.equal(request.headers.authorization, `Bearer ${PARTNER_TOKEN}`);
    assert.equal(request.headers['webhook-id'], accepted.body.webhook_id);
    const { event_id: _id, ...envelope } = event;
    assert.deepEqual(JSON.parse(request.body), envelope);

    const row = await db.knex('webhook_events').where({ id: accepted.body.webhook_id }).first();
    assert.deepEqual(
      [row.status, row.run_id, row.workflow_id],
      ['delivered', accepted.body.run_id, accepted.body.workflow_id],
    );
    const attempts = await db.knex('webhook_attempts').where({ webhook_id: accepted.body.webhook_id });
    assert.deepEqual(
      attempts.map((a) => [a.attempt, a.http_status, a.succeeded]),
      [[1, 204, true]],
    );

    // Decoded payloads: the event is there (so the check can see payloads), the partner token is not.
    const history = await handle.fetchHistory();
    assert.ok(occurrencesIn(history, event.data.candidate.email) > 0);
    assert.equal(occurrencesIn(history, PARTNER_TOKEN), 0);
    // The same check catches a token planted in one payload's bytes.
    const planted = structuredClone(history);
    const input = planted.events![0].workflowExecutionStartedEventAttributes!.input!.payloads![0];
    input.data = Buffer.concat([Buffer.from(input.data!), Buffer.from(`"${PARTNER_TOKEN}"`)]);
    assert.equal(occurrencesIn(planted, PARTNER_TOKEN), 1);
  });

  it('keeps a 100 KiB candidate event in its history once (the workflow input), not once per attempt or record', async () => {
    const marker = `marker-${randomUUID()}`;
    const event = candidateOf('acme', { message: `${marker} ${'x'.repeat(100 * 1024)}` });
    const accepted = await submit(event);
    assert.equal(accepted.status, 202);
    const handle = client.workflow.getHandle(accepted.body.workflow_id);
    await handle.result();
    const history = await handle.fetchHistory();
    assert.equal(occurrencesIn(history, marker), 1);
    const eventBytes = Buffer.byteLength(JSON.stringify(event));
    // The attempt is a local activity: its input is not in the history. Measured: about 107 KB for a 104,372-byte event.
    assert.ok(encodedHistoryBytes(history) < eventBytes + 10_000, `history of ${encodedHistoryBytes(history)} bytes`);
  });

  it('starts one workflow for 20 concurrent requests with one event_id', async () => {
    const event = candidateOf('acme');
    const responses = await Promise.all(Array.from({ length: 20 }, () => submit(event)));
    assert.deepEqual(responses.map((r) => r.status).sort(), [...Array(19).fill(200), 202]);
    assert.equal(new Set(responses.map((r) => r.body.run_id)).size, 1);
    const workflowId = responses[0].body.workflow_id;
    await client.workflow.getHandle(workflowId).result();
    assert.equal((await client.workflow.count(`WorkflowId = '${workflowId}'`)).count, 1);
    assert.equal(partner.requests.length, 1);
    assert.equal(
      await db
        .knex('webhook_events')
        .where({ event_id: event.event_id })
        .count()
        .first()
        .then((r) => Number(r!.count)),
      1,
    );
  });

  describe('list queries and stopped deliveries', () => {
    const company = `co-${randomUUID().slice(0, 8)}`;
    const ids: Record<'delivered' | 'waiting' | 'failed', string> = { delivered: '', waiting: '', failed: '' };

    before(async () => {
      const delivered = await submit(candidateOf(company));
      ids.delivered = delivered.body.workflow_id;
      await client.workflow.getHandle(ids.delivered).result();

      const waiting = candidateOf(company);
      answers.set(prepareWebhook(waiting).webhookId, 500);
      ids.waiting = (await submit(waiting)).body.workflow_id;

      const failed = candidateOf(company);
      answers.set(prepareWebhook(failed).webhookId, 503);
      ids.failed = (
        await startWebhook(client, failed as WebhookEventInput, { taskQueue: compressedQueue, sendTimeoutMs: 2000 })
      ).workflowId;
      assert.equal(((await client.workflow.getHandle(ids.failed).result()) as DeliverySummary).status, 'failed');
    });

    after(async () => {
      await client.workflow
        .getHandle(ids.waiting)
        .terminate('end of test')
        .catch(() => undefined);
    });

    // WebhookStatus appears with a delivery's first failure; one delivered on its first try is a Completed run without it.
    const statusQueries = {
      delivered: `ExecutionStatus = 'Completed' AND WebhookStatus IS NULL`,
      waiting: `WebhookStatus = 'waiting'`,
      failed: `WebhookStatus = 'failed'`,
    };
    for (const status of ['delivered', 'waiting', 'failed'] as const) {
      it(`finds the ${status} delivery by ${statusQueries[status]} and CompanyId`, async () => {
        const query = `${statusQueries[status]} AND CompanyId = '${company}' AND WebhookEventType = 'candidate' AND WebhookAction = 'new'`;
        await eventually(query, async () => (await webhookIdsWhere(query)).length > 0);
        assert.deepEqual(await webhookIdsWhere(query), [ids[status]]);
      });
    }

    it('finds all three by CompanyId alone', async () => {
      assert.deepEqual(await webhookIdsWhere(`CompanyId = '${company}'`), Object.values(ids).sort());
    });

    const waitingDelivery = async () => {
      const event = candidateOf(company);
      answers.set(prepareWebhook(event).webhookId, 500);
      const accepted = await submit(event);
      const handle = client.workflow.getHandle(accepted.body.workflow_id);
      await eventually('the waiting state', async () => (await handle.query(webhookStatusQuery)).state === 'waiting');
      return { accepted, handle };
    };
    const statusUrl = async (url: string) =>
      (await (await fetch(url, { headers: { authorization: `Bearer ${INTERNAL_TOKEN}` } })).json()) as Record<
        string,
        unknown
      >;

    it('records a cancelled waiting delivery as cancelled, in PostgreSQL and in WebhookStatus', async () => {
      const { accepted, handle } = await waitingDelivery();
      await handle.cancel();
      await assert.rejects(handle.result(), /cancelled/i);
      const row = await db.knex('webhook_events').where({ id: accepted.body.webhook_id }).first();
      assert.equal(row.status, 'cancelled');
      assert.ok(row.finished_at instanceof Date);
      assert.equal((await statusUrl(accepted.body.status_url)).status, 'cancelled');
      const query = `WebhookStatus = 'cancelled' AND CompanyId = '${company}'`;
      await eventually(query, async () => (await webhookIdsWhere(query)).length > 0);
      assert.deepEqual(await webhookIdsWhere(query), [accepted.body.workflow_id]);
    });

    it('records a terminated waiting delivery as terminated when its status URL is read', async () => {
      const { accepted, handle } = await waitingDelivery();
      await handle.terminate('operator stopped it');
      assert.equal((await db.knex('webhook_events').where({ id: accepted.body.webhook_id }).first()).status, 'pending');
      const view = await statusUrl(accepted.body.status_url);
      assert.equal(view.status, 'terminated');
      assert.equal(view.live, null);
      const row = await db.knex('webhook_events').where({ id: accepted.body.webhook_id }).first();
      assert.equal(row.status, 'terminated');
      assert.ok(row.finished_at instanceof Date);
    });
  });

  it('webhooks send (the CLI) starts a delivery the worker completes, and prints its ids', async () => {
    const event = candidateOf('acme');
    const file = path.join(await tempDir('send'), 'event.json');
    await writeFile(file, JSON.stringify(event));
    const { code, stdout } = await runCli(['webhooks', 'send', file], {
      DATABASE_URL: db.url,
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_TASK_QUEUE: config.TEMPORAL_TASK_QUEUE,
    });
    assert.equal(code, 0);
    const printed = JSON.parse(stdout);
    assert.deepEqual(
      [printed.status, printed.event_id, printed.workflow_id],
      ['accepted', event.event_id, `webhook-candidate-new-${event.event_id}`],
    );
    assert.equal(
      ((await client.workflow.getHandle(printed.workflow_id).result()) as DeliverySummary).status,
      'delivered',
    );
    assert.equal(partner.requests.length, 1);
  });

  it('the worker command refuses to run with one clear line when Temporal refuses its set-up', async () => {
    const namespace = `missing-${randomUUID()}`;
    const { code, stdout } = await runCli(['worker'], {
      DATABASE_URL: db.url,
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_NAMESPACE: namespace,
      PARTNER_ENDPOINT: partner.url,
      PARTNER_ACCESS_TOKEN: PARTNER_TOKEN,
      WORKER_HTTP_PORT: String(await findFreePort()),
    });
    assert.equal(code, 1);
    const errors = logLines(stdout).filter((line) => line.level >= 50);
    assert.equal(errors.length, 1);
    assert.match(
      errors[0].msg,
      new RegExp(
        `^Temporal refused to register the webhook search attributes in namespace ${namespace} \\(.+\\); register them once with: temporal operator search-attribute create --name WebhookEventType --name WebhookAction --name WebhookStatus --name CompanyId --type Keyword --namespace ${namespace}$`,
      ),
    );
  });

  it('answers 500, not 503, when Temporal refuses the configuration (a namespace that does not exist), and keeps no row', async () => {
    const misconfigured = { ...config, temporal: { ...config.temporal, namespace: `missing-${randomUUID()}` } };
    const wrongStarter = createTemporalGateway(misconfigured, logger);
    const wrongApi = await startApiServer(
      { config: misconfigured, knex: db.knex, logger, temporalGateway: wrongStarter },
      0,
      '127.0.0.1',
    );
    try {
      const event = candidateOf('acme');
      const response = await submit(event, wrongApi.url);
      assert.equal(response.status, 500);
      assert.equal(
        response.body.detail,
        "The request was not carried out because Temporal refused the service's configuration. An operator must fix it; retrying will not help.",
      );
      assert.match(
        response.body.reason,
        new RegExp(
          `Temporal refused to register the webhook search attributes in namespace ${misconfigured.temporal.namespace}`,
        ),
      );
      assert.equal(await db.knex('webhook_events').where({ event_id: event.event_id }).first(), undefined);
    } finally {
      await wrongApi.close();
      await wrongStarter.close();
    }
  });
});
