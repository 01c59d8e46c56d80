// Temporal UI reads encrypted payloads through the service's codec server, in a real headless Chromium
// against the dev server's own UI, wired as `npm start` wires it (--ui-codec-endpoint with the token in the
// path, the UI's origin allowed by CORS). A missing `temporal` binary or Chromium fails the suite.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { randomBytes, randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startApiServer, type ApiServer } from '../../api/server';
import { uiCodecEndpoint } from '../../api/codec/router';
import type { WebhookEventInput } from '../../events/envelope';
import { findFreePort } from '../../lib/ports';
import { loadConfig, type Config } from '../../lib/config';
import { createLogger } from '../../lib/logger';
import type { DevServer } from '../../temporal/dev-server';
import { ensureSearchAttributes } from '../../temporal/register-search-attributes';
import { dataConverterFor } from '../../temporal/settings';
import { startWebhook } from '../../application/ingestion/start-webhook';
import type { DeliverySummary } from '../../workflows/types';
import candidateNew from '../fixtures/events/candidate-new.json';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { eventually } from '../support/eventually';
import { occurrencesIn } from '../support/history';
import { startTestDevServer, startTestWorker, type TestWorker } from '../support/temporal';
import { startPartnerServer, type PartnerServer } from '../support/partner-server';
import { CODEC_TOKEN, PARTNER_TOKEN } from '../support/tokens';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const NAMESPACE = 'default';
const { email, phone_number: phone } = candidateNew.data.candidate;

describe('Temporal UI shows encrypted payloads decoded by the codec server (headless Chromium, dev server)', function () {
  this.timeout(60_000);
  const logger = createLogger('silent');
  let browser: Browser;
  let server: DevServer;
  let db: TestDatabase;
  let partner: PartnerServer;
  let api: ApiServer;
  let native: NativeConnection;
  let connection: Connection;
  let worker: TestWorker;
  let config: Config;
  let workflowId: string;
  let page: Page;
  const codecCalls: Array<{ url: string; status: number }> = [];

  before(async () => {
    if (!existsSync(CHROMIUM))
      throw new Error(`Chromium not found at ${CHROMIUM}: apt-get install chromium, or set CHROMIUM_PATH`);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    // The UI is told the codec's address before the API listens there, as `npm start` does.
    const apiPort = await findFreePort();
    server = await startTestDevServer({
      ui: true,
      uiCodecEndpoint: uiCodecEndpoint(`http://127.0.0.1:${apiPort}`, CODEC_TOKEN),
    });
    db = await createTestDatabase();
    partner = await startPartnerServer();
    config = loadConfig({
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_TASK_QUEUE: `ui-codec-${randomUUID()}`,
      PARTNER_ENDPOINT: partner.url,
      PARTNER_ACCESS_TOKEN: PARTNER_TOKEN,
      PAYLOAD_ENCRYPTION_KEYS: `ui-key:${randomBytes(32).toString('base64')}`,
      CODEC_AUTH_TOKEN: CODEC_TOKEN,
      CODEC_CORS_ORIGINS: server.uiUrl!,
    });
    api = await startApiServer({ config, knex: db.knex, logger }, apiPort, '127.0.0.1');
    connection = await Connection.connect({ address: server.address });
    await ensureSearchAttributes(connection, NAMESPACE);
    native = await NativeConnection.connect({ address: server.address });
    worker = await startTestWorker({ config, knex: db.knex, logger }, native);
    const client = new Client({ connection, namespace: NAMESPACE, dataConverter: dataConverterFor(config) });
    const event = { ...candidateNew, event_id: `ui-codec-${randomUUID().slice(0, 8)}` } as WebhookEventInput;
    workflowId = (await startWebhook(client, event, { taskQueue: config.TEMPORAL_TASK_QUEUE, sendTimeoutMs: 2000 }))
      .workflowId;
    const summary: DeliverySummary = await client.workflow.getHandle(workflowId).result();
    assert.equal(summary.status, 'delivered');
    await eventually(
      'Temporal UI',
      async () =>
        (await fetch(`${server.uiUrl}/api/v1/namespaces/${NAMESPACE}/workflows`).catch(() => undefined))?.ok === true,
      15_000,
    );
    page = await browser.newPage({ viewport: { width: 1400, height: 1200 } });
    page.setDefaultTimeout(15_000);
    page.on('response', (response) => {
      if (response.url().includes('/codec/')) codecCalls.push({ url: response.url(), status: response.status() });
    });
  });

  after(async () => {
    const steps = [
      () => browser?.close(),
      () => worker?.stop(),
      () => native?.close(),
      () => connection?.close(),
      () => api?.close(),
      () => partner?.close(),
      () => db?.drop(),
      () => server?.stop(),
    ];
    const errors: unknown[] = [];
    for (const step of steps)
      await Promise.resolve()
        .then(step)
        .catch((error: unknown) => errors.push(error));
    if (errors.length) throw errors[0];
  });

  it('the stored history is encrypted, and the workflow page shows the decoded event: the e-mail and phone are on the page', async () => {
    const raw = await new Client({ connection, namespace: NAMESPACE }).workflow.getHandle(workflowId).fetchHistory();
    assert.equal(occurrencesIn(raw, email), 0);

    await page.goto(`${server.uiUrl}/namespaces/${NAMESPACE}/workflows/${encodeURIComponent(workflowId)}`);
    const input = page.locator('.cm-content', { hasText: email });
    await input.first().waitFor({ state: 'visible' });
    assert.match(await input.first().innerText(), new RegExp(phone.replace(/[+]/g, '\\+')));
    assert.ok(
      codecCalls.some((call) => new URL(call.url).pathname.endsWith('/decode') && call.status === 200),
      JSON.stringify(codecCalls),
    );
    assert.equal(await page.getByText('binary/encrypted').count(), 0);
  });
});
