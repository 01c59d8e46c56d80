// The service on a Temporal it reaches over TLS: nginx (Debian's) terminates TLS in front of one dev server, on
// a port demanding a client certificate and a port demanding an API key. For each, ingestion, the worker's
// delivery, the operations API and `partner-service webhooks send` work; a wrong CA, a missing or strange
// client certificate and a wrong API key are each reported in one line of words.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import candidateNew from '../fixtures/events/candidate-new.json';
import { startApiServer, type ApiServer } from '../../api/server';
import { createTemporalGateway } from '../../temporal/gateway';
import { loadConfig } from '../../lib/config';
import { createLogger } from '../../lib/logger';
import type { DevServer } from '../../temporal/dev-server';
import { connectWithBackoff } from '../../worker/temporal-connection';
import { startWebhookWorker, type WebhookWorkerHandle } from '../../worker/webhook-worker';
import { runCli } from '../support/cli';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { eventually } from '../support/eventually';
import { startTestDevServer, tempDir } from '../support/temporal';
import { makeTestCertificates, startTlsProxy, type TestCertificates, type TlsProxy } from '../support/tls-proxy';
import { capturingLogger } from '../support/capturing-logger';
import { startPartnerServer, type PartnerServer } from '../support/partner-server';
import { INTERNAL_TOKEN, PARTNER_TOKEN } from '../support/tokens';

const API_KEY = `tls-api-key-${randomUUID()}`;
const UNTRUSTED =
  "the server's certificate is not trusted: is TEMPORAL_TLS_SERVER_CA_CERT_PATH (or _DATA) the CA that signed it?";
const NO_CLIENT_CERT =
  'the server demands a client certificate: set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH (or _DATA)';
const REFUSED_CERT = 'the server refused the client certificate';
const REFUSED_KEY = 'the API key was refused: is TEMPORAL_API_KEY right?';

describe('Temporal over TLS (nginx in front of a dev server): mTLS and API key', function () {
  this.timeout(120_000);
  const logger = createLogger('silent');
  let server: DevServer;
  let certs: TestCertificates;
  let proxy: TlsProxy;
  let db: TestDatabase;
  let partner: PartnerServer;
  let eventFile: string;
  /** Webhook ids whose first attempt the partner answers 500, so the delivery waits for a retry. */
  const failFirst = new Set<string>();

  before(async () => {
    [server, certs, db, partner] = await Promise.all([
      startTestDevServer(),
      makeTestCertificates(),
      createTestDatabase(),
      startPartnerServer(),
    ]);
    proxy = await startTlsProxy(server.address, certs, API_KEY);
    partner.handler = (req, res) => {
      const id = String(req.headers['webhook-id']);
      res.writeHead(failFirst.delete(id) ? 500 : 200).end();
    };
    eventFile = path.join(certs.dir, 'event.json');
  });
  after(async () => {
    await proxy?.stop();
    await partner?.close();
    await db?.drop();
    await server?.stop();
    if (certs) await rm(certs.dir, { recursive: true, force: true });
  });

  const mtls = () => ({
    TEMPORAL_ADDRESS: proxy.mtlsAddress,
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: certs.ca,
    TEMPORAL_TLS_CLIENT_CERT_PATH: certs.clientCert,
    TEMPORAL_TLS_CLIENT_KEY_PATH: certs.clientKey,
    // grpc-js warns on stderr (DEP0123) when the TLS server name is an IP address; the profile test goes by IP.
    TEMPORAL_TLS_SERVER_NAME: 'localhost',
  });
  // The key port also checks a CA given as data rather than a path.
  const apiKey = () => ({
    TEMPORAL_ADDRESS: proxy.apiKeyAddress,
    TEMPORAL_API_KEY: API_KEY,
    TEMPORAL_TLS_SERVER_CA_CERT_DATA: readFileSync(certs.ca, 'utf8'),
    TEMPORAL_TLS_SERVER_NAME: 'localhost',
  });

  const serviceEnv = (temporal: Record<string, string>, taskQueue: string) => ({
    INTERNAL_API_TOKEN: INTERNAL_TOKEN,
    PARTNER_ENDPOINT: partner.url,
    PARTNER_ACCESS_TOKEN: PARTNER_TOKEN,
    PARTNER_TIMEOUT_MS: '2000',
    TEMPORAL_TASK_QUEUE: taskQueue,
    ...temporal,
  });

  const call = async (api: ApiServer, method: string, suffix: string, body?: unknown) => {
    const response = await fetch(`${api.url}/internal/v1/webhooks${suffix}`, {
      method,
      headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Record<string, any> };
  };

  const freshEvent = () => ({ ...candidateNew, event_id: `tls-${randomUUID()}` });
  const statusOf = async (webhookId: string) =>
    (await db.knex('webhook_events').where({ id: webhookId }).first())?.status;

  async function cliSend(env: Record<string, string>) {
    await writeFile(eventFile, JSON.stringify(freshEvent()));
    return runCli(['webhooks', 'send', eventFile], {
      PATH: process.env.PATH,
      DATABASE_URL: db.url,
      LOG_LEVEL: 'silent',
      ...env,
    });
  }

  for (const [mode, temporalEnv] of [
    ['mTLS', mtls],
    ['API key', apiKey],
  ] as const) {
    describe(mode, () => {
      let api: ApiServer;
      let worker: WebhookWorkerHandle;
      let gateway: ReturnType<typeof createTemporalGateway>;
      let env: Record<string, string>;

      before(async () => {
        env = serviceEnv(temporalEnv(), `tls-${randomUUID()}`);
        const config = loadConfig(env);
        gateway = createTemporalGateway(config, logger);
        api = await startApiServer({ config, knex: db.knex, logger, temporalGateway: gateway }, 0, '127.0.0.1');
        worker = startWebhookWorker({ config, knex: db.knex, logger });
      });
      after(async () => {
        await worker?.stop();
        await api?.close();
        await gateway?.close();
      });

      it('ingests, delivers through the worker, shows the live state and retries now', async () => {
        const accepted = await call(api, 'POST', '', freshEvent());
        assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
        const webhookId: string = accepted.body.webhook_id;
        failFirst.add(webhookId);
        await eventually('attempt 1 answered 500', async () => !failFirst.has(webhookId));
        await eventually(
          'the delivery to wait for its retry',
          async () => (await call(api, 'GET', `/${webhookId}`)).body.live?.state === 'waiting',
        );
        const shown = await call(api, 'GET', `/${webhookId}`);
        assert.equal(shown.status, 200);
        assert.equal(shown.body.live.source, 'temporal');
        const retried = await call(api, 'POST', `/${webhookId}/retry-now`);
        assert.deepEqual(retried, {
          status: 202,
          body: { webhook_id: webhookId, attempt: 2, status_url: accepted.body.status_url },
        });
        await eventually('delivered', async () => (await statusOf(webhookId)) === 'delivered', 10_000);
        const attempts = await db.knex('webhook_attempts').where({ webhook_id: webhookId }).orderBy('attempt');
        assert.deepEqual(
          attempts.map((a) => [a.attempt, a.trigger, a.http_status]),
          [
            [1, 'schedule', 500],
            [2, 'manual', 200],
          ],
        );
      });

      it('`partner-service webhooks send` starts the delivery, and the worker delivers it', async () => {
        const result = await cliSend(env);
        assert.equal(result.code, 0, result.stderr);
        const sent = JSON.parse(result.stdout);
        assert.equal(sent.status, 'accepted');
        await eventually('delivered', async () => (await statusOf(sent.webhook_id)) === 'delivered', 10_000);
      });
    });
  }

  it('reads the connection from a temporal.toml profile (TEMPORAL_CONFIG_FILE and TEMPORAL_PROFILE)', async () => {
    const file = path.join(await tempDir('toml'), 'temporal.toml');
    await writeFile(
      file,
      [
        '[profile.default]',
        'address = "127.0.0.1:1"',
        '',
        '[profile.tls-test]',
        `address = "${proxy.mtlsAddress}"`,
        '',
        '[profile.tls-test.tls]',
        `server_ca_cert_path = "${certs.ca}"`,
        `client_cert_path = "${certs.clientCert}"`,
        `client_key_path = "${certs.clientKey}"`,
        '',
      ].join('\n'),
    );
    const env = serviceEnv({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'tls-test' }, `tls-${randomUUID()}`);
    const config = loadConfig(env);
    assert.equal(config.temporal.address, proxy.mtlsAddress);
    const worker = startWebhookWorker({ config, knex: db.knex, logger });
    try {
      const result = await cliSend(env);
      assert.equal(result.code, 0, result.stderr);
      const sent = JSON.parse(result.stdout);
      await eventually('delivered', async () => (await statusOf(sent.webhook_id)) === 'delivered', 10_000);
    } finally {
      await worker.stop();
    }
  });

  // Each refusal, in the words of the API's 503, of `webhooks send` and of the worker's warning.
  const refusals: Array<[string, () => Record<string, string>, string]> = [
    [
      'a CA that did not sign the server certificate',
      () => ({ ...mtls(), TEMPORAL_TLS_SERVER_CA_CERT_PATH: certs.otherCa }),
      UNTRUSTED,
    ],
    [
      'no client certificate on the mTLS port',
      () => ({
        TEMPORAL_ADDRESS: proxy.mtlsAddress,
        TEMPORAL_TLS_SERVER_CA_CERT_PATH: certs.ca,
        TEMPORAL_TLS_SERVER_NAME: 'localhost',
      }),
      NO_CLIENT_CERT,
    ],
    [
      'a client certificate of another CA',
      () => ({
        ...mtls(),
        TEMPORAL_TLS_CLIENT_CERT_PATH: certs.strangerCert,
        TEMPORAL_TLS_CLIENT_KEY_PATH: certs.strangerKey,
      }),
      REFUSED_CERT,
    ],
    ['a wrong API key', () => ({ ...apiKey(), TEMPORAL_API_KEY: 'not-the-key' }), REFUSED_KEY],
  ];
  for (const [what, temporalEnv, words] of refusals) {
    it(`says so in one line for ${what}`, async () => {
      const env = serviceEnv(temporalEnv(), `tls-${randomUUID()}`);
      const config = loadConfig(env);
      const line = `cannot connect to ${config.temporal.address} (${words})`;

      const gateway = createTemporalGateway(config, logger, { connectTimeoutMs: 1000 });
      const api = await startApiServer({ config, knex: db.knex, logger, temporalGateway: gateway }, 0, '127.0.0.1');
      try {
        const response = await call(api, 'POST', '', freshEvent());
        assert.deepEqual(response, {
          status: 503,
          body: {
            detail: `Temporal is unreachable (${line}): nothing was stored. Retry later with the same event_id.`,
            reason: 'temporal_unreachable',
          },
        });
      } finally {
        await api.close();
        await gateway.close();
      }

      const sent = await cliSend(env);
      assert.deepEqual(
        [sent.code, sent.stdout, sent.stderr],
        [1, '', `Webhook not accepted: Temporal is unavailable: ${line}\n`],
      );

      const { logger: workerLogger, entries } = capturingLogger();
      const abort = new AbortController();
      const connecting = connectWithBackoff(config, workerLogger, abort.signal, { initialDelayMs: 60_000 });
      await eventually('the worker to warn', async () => entries().some((e) => e.level === 40));
      abort.abort();
      assert.equal(await connecting, undefined);
      assert.deepEqual(
        entries().map((e) => [e.level, (e as { reason?: string }).reason]),
        [[40, words]],
      );
      assert.ok(
        !JSON.stringify(entries()).includes(API_KEY) && !JSON.stringify(entries()).includes('not-the-key'),
        'no key in the logs',
      );
    });
  }
});
