// GET /docs in a real headless Chromium: Swagger UI, served by the service itself, renders /openapi.json with
// the listings, SCIM and the webhook catalog. Requests to any other origin are blocked, so the page must work
// offline; a CSP violation or a page error fails the test. A missing Chromium fails too: there is no skip.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { startTestApi, type TestApi } from '../support/api';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

describe('GET /docs: the API reference page', function () {
  this.timeout(60_000);
  let api: TestApi;
  let browser: Browser;

  before(async () => {
    if (!existsSync(CHROMIUM))
      throw new Error(`Chromium not found at ${CHROMIUM}: apt-get install chromium, or set CHROMIUM_PATH`);
    api = await startTestApi();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  });
  after(async () => {
    await browser?.close();
    await api?.close();
  });

  it('serves the page and its assets from the service, with a Content-Security-Policy', async () => {
    const page = await fetch(`${api.api.url}/docs`);
    assert.equal(page.status, 200);
    assert.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.match(page.headers.get('content-security-policy')!, /script-src 'self';/);
    const asset = await fetch(`${api.api.url}/docs/assets/swagger-ui-bundle.js`);
    assert.equal(asset.status, 200);
    assert.equal(asset.headers.get('content-type'), 'application/javascript; charset=utf-8');
    assert.equal((await fetch(`${api.api.url}/docs/assets/package.json`)).status, 404);
    assert.equal((await fetch(`${api.api.url}/docs/assets/..%2Fpackage.json`)).status, 404);
  });

  it('renders the listings, SCIM Groups and the three specified webhooks, offline', async () => {
    const context = await browser.newContext();
    const origin = new URL(api.api.url).origin;
    const outside: string[] = [];
    await context.route('**/*', (route) => {
      if (new URL(route.request().url()).origin === origin) return route.continue();
      outside.push(route.request().url());
      return route.abort();
    });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    await page.goto(`${api.api.url}/docs`);
    await page.getByText('Partner Integration Service', { exact: false }).first().waitFor();
    const paths = [
      '/{api_version}/companies/{company_pk}/users/',
      '/{api_version}/jobs/{job_pk}/users/',
      '/scim/v2/Groups',
      '/scim/v2/Groups/{id}',
    ];
    for (const path of paths) await page.locator('.opblock-summary-path', { hasText: path }).first().waitFor();
    const shownPaths = await page.locator('.opblock-summary-path').allInnerTexts();
    for (const path of paths)
      assert.ok(
        shownPaths.some((p) => p.replace(/\u200b/g, '') === path),
        `${path} not shown`,
      );
    // Webhooks are listed by their names in the catalog.
    for (const name of ['company/signup', 'job/new', 'candidate/new'])
      await page.locator('.opblock-summary', { hasText: name }).first().waitFor();
    await page.getByText('Verifying a webhook').waitFor();
    // The internal API is always described, each operation with its token scope.
    // The partner API's tag is declared with its description, so it comes first; the first line is its name.
    const firstLines = (texts: string[]) => texts.map((text) => text.split('\n')[0]);
    assert.deepEqual(firstLines(await page.locator('.opblock-tag').allInnerTexts()), [
      'partner',
      'default',
      'scim',
      'internal',
    ]);
    assert.deepEqual(firstLines(await page.locator('h2, h3, h4, .opblock-tag').allInnerTexts()), [
      'Verifying a webhook',
      'partner',
      'default',
      'scim',
      'internal',
      'Webhooks',
      'Schemas',
    ]);
    assert.equal(
      await page.locator('.opblock-summary', { hasText: 'job/new' }).first().innerText(),
      'POST\njob/new\njob/new (spec 2.3)',
    );
    assert.deepEqual(outside, []);
    assert.deepEqual(problems, []);
    await context.close();
  });
});
