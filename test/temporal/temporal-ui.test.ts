// What an operator sees in Temporal UI, checked in a real headless Chromium against the dev server's own UI:
// the retry timers' summaries and the webhook search attributes, for a delivery waiting on its second timer
// and for one that failed. A missing `temporal` binary or Chromium fails the suite: there is no skip.
// UPDATE_SCREENSHOTS=1 also rewrites docs/images/temporal-ui-waiting-delivery.png (shown in docs/webhooks.md).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { WebhookEventInput } from '../../events/envelope';
import { loadConfig } from '../../lib/config';
import { createLogger } from '../../lib/logger';
import { ensureSearchAttributes } from '../../temporal/register-search-attributes';
import type { DevServer } from '../../temporal/dev-server';
import { startWebhook } from '../../application/ingestion/start-webhook';
import { DEFAULT_TASK_QUEUE } from '../../lib/config';
import { webhookStatusQuery } from '../../workflows/webhooks/messages';
import type { DeliverySummary } from '../../workflows/types';
import candidateNew from '../fixtures/events/candidate-new.json';
import { withOwnEntity } from '../support/own-entity';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { startTestDevServer, startTestWorker, type TestWorker } from '../support/temporal';
import { eventually } from '../support/eventually';
import { answer, startPartnerServer, type PartnerServer } from '../support/partner-server';
import { PARTNER_TOKEN } from '../support/tokens';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const NAMESPACE = 'default';
const COMPRESSED_QUEUE = `${DEFAULT_TASK_QUEUE}-compressed-timers`;
const SCREENSHOT = path.resolve(__dirname, '..', '..', 'docs', 'images', 'temporal-ui-waiting-delivery.png');

/** The UI's API answers 503 for about a second after the server answers gRPC; a page opened then shows an error. */
const uiReady = (uiUrl: string) =>
  eventually(
    'Temporal UI',
    async () => (await fetch(`${uiUrl}/api/v1/namespaces/${NAMESPACE}/workflows`).catch(() => undefined))?.ok === true,
    15_000,
  );

function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(`Chromium not found at ${CHROMIUM}: apt-get install chromium, or set CHROMIUM_PATH`);
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
}

/** Waits for an element whose whole text is `text`; strict, so it must appear exactly once. */
const visibleText = (page: Page, text: string) => page.getByText(text, { exact: true }).waitFor({ state: 'visible' });

/** The status badge in the header (its text is 'Running', shown upper-case by CSS). */
const executionStatus = (page: Page, status: 'Running' | 'Completed') =>
  page.getByTestId('execution-status').getByText(status, { exact: true }).waitFor({ state: 'visible' });

/** The webhook attributes as the Search Attributes tab shows them (a JSON code view; BuildIds left out). */
async function shownSearchAttributes(page: Page): Promise<Record<string, unknown>> {
  await page.getByRole('tab', { name: 'Search Attributes' }).click();
  const code = page.locator('.cm-content', { hasText: 'WebhookStatus' });
  await code.waitFor();
  const { BuildIds: _buildIds, ...shown } = JSON.parse(await code.innerText()) as Record<string, unknown>;
  return shown;
}

describe('Temporal UI shows the webhook deliveries (headless Chromium, dev server)', function () {
  this.timeout(60_000);
  const logger = createLogger('silent');
  let server: DevServer;
  let uiUrl: string;
  let connection: Connection;
  let client: Client;
  let native: NativeConnection;
  let db: TestDatabase;
  let partner: PartnerServer;
  const workers: TestWorker[] = [];
  let browser: Browser;
  let page: Page;
  let waitingId: string;
  let failedId: string;

  const workerConfig = (taskQueue: string) =>
    loadConfig({
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_TASK_QUEUE: taskQueue,
      PARTNER_ENDPOINT: partner.url,
      PARTNER_ACCESS_TOKEN: PARTNER_TOKEN,
      PARTNER_TIMEOUT_MS: '2000',
    });
  // A short suffix keeps the id readable in the screenshot; 8 hex digits are plenty on a fresh in-memory server.
  const uniqueEvent = () =>
    withOwnEntity({
      ...candidateNew,
      event_id: `${candidateNew.event_id}-${randomUUID().slice(0, 8)}`,
    }) as WebhookEventInput;
  const openWorkflow = (workflowId: string) =>
    page.goto(`${uiUrl}/namespaces/${NAMESPACE}/workflows/${encodeURIComponent(workflowId)}`);

  before(async () => {
    // First, so a missing Chromium fails before anything else starts.
    browser = await launchChromium();
    server = await startTestDevServer({ ui: true });
    uiUrl = server.uiUrl!;
    connection = await Connection.connect({ address: server.address });
    await ensureSearchAttributes(connection, NAMESPACE);
    client = new Client({ connection, namespace: NAMESPACE });
    native = await NativeConnection.connect({ address: server.address });
    db = await createTestDatabase();
    partner = await startPartnerServer(answer(500, 'partner down'));
    workers.push(await startTestWorker({ config: workerConfig(DEFAULT_TASK_QUEUE), knex: db.knex, logger }, native));
    // Started first: its real 10 s timer runs while the rest is set up, and the failed delivery finishes meanwhile.
    waitingId = (await startWebhook(client, uniqueEvent(), { taskQueue: DEFAULT_TASK_QUEUE, sendTimeoutMs: 2000 }))
      .workflowId;
    // Real timers would take 1110 s to fail a delivery; this queue's workflows wait 1/1000 of each.
    const compressTimers = require.resolve('../support/compress-timers');
    workers.push(
      await startTestWorker({ config: workerConfig(COMPRESSED_QUEUE), knex: db.knex, logger }, native, {
        interceptorModules: [compressTimers],
      }),
    );
    failedId = (await startWebhook(client, uniqueEvent(), { taskQueue: COMPRESSED_QUEUE, sendTimeoutMs: 2000 }))
      .workflowId;
    await uiReady(uiUrl);
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    page.setDefaultTimeout(10_000);
  });

  after(async () => {
    const steps = [
      () => browser?.close(),
      ...workers.map((worker) => () => worker.stop()),
      () => native?.close(),
      () => connection?.close(),
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

  it('a delivery waiting on its second retry: the timer summary and the search attributes', async () => {
    const handle = client.workflow.getHandle(waitingId);
    // Two 500s around the real 10 s timer, then the 100 s timer starts.
    await eventually(
      'the second retry timer',
      async () => {
        const current = await handle.query(webhookStatusQuery);
        return current.state === 'waiting' && current.attempts.length === 2;
      },
      25_000,
    );
    const status = await handle.query(webhookStatusQuery);
    assert.deepEqual(
      status.attempts.map((a) => a.httpStatus),
      [500, 500],
    );

    await openWorkflow(waitingId);
    await executionStatus(page, 'Running');
    await visibleText(page, 'retry 1 of 3 in 10 s');
    await visibleText(page, 'retry 2 of 3 in 100 s');
    assert.equal(await page.getByText('retry 3 of 3 in 1000 s', { exact: true }).count(), 0);
    if (process.env.UPDATE_SCREENSHOTS === '1') await saveScreenshot(page);

    assert.deepEqual(await shownSearchAttributes(page), {
      CompanyId: 'acme',
      WebhookAction: 'new',
      WebhookEventType: 'candidate',
      WebhookStatus: 'waiting',
    });
  });

  it('a failed delivery: all three timer summaries and WebhookStatus failed', async () => {
    const summary: DeliverySummary = await client.workflow.getHandle(failedId).result();
    assert.equal(summary.status, 'failed');
    assert.deepEqual(
      summary.attempts.map((a) => a.httpStatus),
      [500, 500, 500, 500],
    );

    await openWorkflow(failedId);
    await executionStatus(page, 'Completed');
    for (const timer of ['retry 1 of 3 in 10 s', 'retry 2 of 3 in 100 s', 'retry 3 of 3 in 1000 s'])
      await visibleText(page, timer);

    assert.deepEqual(await shownSearchAttributes(page), {
      CompanyId: 'acme',
      WebhookAction: 'new',
      WebhookEventType: 'candidate',
      WebhookStatus: 'failed',
    });
  });
});

/** The docs' picture: the header and the timeline with the waiting timer, the event JSON folded to make room. */
async function saveScreenshot(page: Page): Promise<void> {
  const input = page.locator('.cm-editor', { has: page.getByRole('textbox', { name: 'Input' }) });
  await input.getByTitle('Fold line', { exact: true }).first().click();
  await input.getByText('{…}', { exact: true }).waitFor();
  await mkdir(path.dirname(SCREENSHOT), { recursive: true });
  await page.screenshot({ path: SCREENSHOT });
}
