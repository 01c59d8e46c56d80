// The partner portal in a real browser (Debian's Chromium through playwright-core) on real servers: the dev server,
// PostgreSQL, the API and a worker (timers 1000 times shorter), and a loopback partner the test controls. Requests
// to any other origin are aborted, so the page must work offline. Every page is checked by axe-core, every console
// error or CSP violation fails the test, and a test tabs through every page. A missing Chromium fails: no skip.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import AxeBuilder from '@axe-core/playwright';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { revokePartnerApp } from '../../cli/apps-store';
import { insertCompany } from '../listings/support';
import { submitWebhook } from '../support/api';
import { eventually } from '../support/eventually';
import { INTERNAL_TOKEN } from '../support/tokens';
import { startWebhookStack, type WebhookStack } from '../support/webhook-stack';
import { partnerApp, partnerCall } from '../partner-api/support';

// The page's globals, for the functions that run in it (page.evaluate): the tests compile without the DOM library.
declare const document: any;
declare const location: any;
declare const window: any;
type HTMLElement = any;
type HTMLButtonElement = any;

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** The docs' screenshots are written only when asked: a test run leaves the checkout as it was. */
const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS ? path.join(__dirname, '..', '..', 'docs', 'images') : undefined;
const FIRST_LOAD_BUDGET = 150 * 1024;
/** Each page of the full app, by its address, with its heading (a page is shown once its heading is). */
const PAGES: ReadonlyArray<readonly [string, string | RegExp]> = [
  ['deliveries', 'Deliveries'],
  ['recovery', 'Recover deliveries'],
  ['endpoint', 'Endpoint'],
  ['health', 'Health'],
  ['catalog', 'Event catalog'],
  ['audit', 'Audit'],
];

describe('the partner portal in Chromium', function () {
  this.timeout(120_000);
  let stack: WebhookStack;
  let browser: Browser;
  let base: string;
  let full: { headers: Record<string, string> };
  let reader: { headers: Record<string, string> };
  let partnerStatus = 400;
  const failed: string[] = [];
  let problems: string[] = [];

  before(async () => {
    if (!existsSync(CHROMIUM))
      throw new Error(`Chromium not found at ${CHROMIUM}: apt-get install chromium, or set CHROMIUM_PATH`);
    stack = await startWebhookStack({
      compressTimers: true,
      partnerHandler: (_req, res) =>
        void res.writeHead(partnerStatus).end(partnerStatus === 400 ? 'no such customer' : ''),
      env: { PARTNER_API_REQUESTS_PER_MINUTE: '100000' },
    });
    base = stack.api.url;
    await insertCompany(stack.db.knex, 'acme');
    full = await partnerApp(stack.db.knex, 'portal-app', ['acme']);
    reader = await partnerApp(stack.db.knex, 'reader-app', ['acme'], ['deliveries:read']);
    for (let n = 0; n < 2; n++) {
      const accepted = await submitWebhook(base, INTERNAL_TOKEN, {
        event_id: `portal-${randomUUID()}`,
        event_type: 'company',
        action: 'signup',
        data: {
          company_id: 'acme',
          internal_id: n + 1,
          company_name: `Acme ${n}`,
          has_config: false,
          dt_created: '2026-11-01 10:00:00',
        },
      });
      failed.push(accepted.webhook_id);
    }
    await eventually(
      'both webhooks failed finally',
      async () =>
        Number((await stack.db.knex('webhook_events').where({ status: 'failed' }).count({ n: '*' }))[0].n) === 2,
      60_000,
    );
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  });
  after(async () => {
    await browser?.close();
    await stack?.close();
  });
  beforeEach(() => {
    problems = [];
  });
  afterEach(function () {
    if (this.currentTest?.state === 'passed') assert.deepEqual(problems, [], 'console errors or CSP violations');
    else if (problems.length) console.log(problems);
  });

  const linkFor = async (headers: Record<string, string>, body: unknown = {}) => {
    const res = await partnerCall(base, headers, 'POST', '/portal-sessions', body);
    assert.equal(res.status, 201, res.text);
    return res.body.url as string;
  };

  /** A fresh browser context (its own cookies) that reaches only the service's origin, and its page. */
  async function newPage(viewport = { width: 1280, height: 900 }): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport });
    const origin = new URL(base).origin;
    await context.route('**/*', (route) =>
      new URL(route.request().url()).origin === origin ? route.continue() : route.abort(),
    );
    const page = await context.newPage();
    page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console: ${message.text()}`);
    });
    page.on('requestfailed', (request) => problems.push(`request failed: ${request.url()}`));
    await page.addInitScript(() =>
      document.addEventListener('securitypolicyviolation', (event: any) =>
        console.error(`CSP violation: ${event.violatedDirective} ${event.blockedURI}`),
      ),
    );
    return { context, page };
  }

  async function openPortal(headers: Record<string, string>, body?: unknown) {
    const opened = await newPage();
    await opened.page.goto(await linkFor(headers, body));
    await opened.page.locator('#nav a').first().waitFor();
    return opened;
  }

  async function visit(page: Page, hash: string, heading: string | RegExp) {
    await page.evaluate((h) => (location.hash = h), hash);
    await page.getByRole('heading', { level: 2, name: heading }).waitFor();
  }

  async function seriousViolations(page: Page): Promise<string[]> {
    const { violations } = await new AxeBuilder({ page }).analyze();
    return violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  }

  it('a link opens a session and leaves the address; its second use shows the refusal; first load under 150 KB', async () => {
    const url = await linkFor(full.headers);
    const { context, page } = await newPage();
    const sizes: Array<Promise<number>> = [];
    page.on('requestfinished', (request) =>
      sizes.push(request.sizes().then((s) => s.responseHeadersSize + s.responseBodySize)),
    );
    await page.goto(url);
    await page.getByRole('heading', { level: 2, name: 'Deliveries' }).waitFor();
    await page.getByRole('link', { name: failed[0] }).waitFor();
    await page.waitForLoadState('networkidle');
    const bytes = (await Promise.all(sizes)).reduce((a, b) => a + b, 0);
    assert.ok(bytes > 10_000 && bytes < FIRST_LOAD_BUDGET, `first load ${bytes} bytes`);
    console.log(`      first load: ${bytes} bytes (budget ${FIRST_LOAD_BUDGET})`);
    assert.equal(page.url(), `${base}/portal#/deliveries`);
    const cookies = await context.cookies();
    const session = cookies.find((c) => c.name === 'portal_session')!;
    assert.equal(session.httpOnly, true);
    assert.equal(session.sameSite, 'Strict');
    assert.equal(await page.evaluate(() => document.cookie.includes('portal_session')), false);
    if (SCREENSHOTS) {
      mkdirSync(SCREENSHOTS, { recursive: true });
      await page.screenshot({ path: path.join(SCREENSHOTS, 'portal-deliveries.png') });
    }
    await context.close();

    const second = await newPage();
    await second.page.goto(url);
    await second.page.getByRole('heading', { name: 'This link cannot be used' }).waitFor();
    await second.page.getByText('This portal link was already used: ask for a new one.').waitFor();
    assert.equal(second.page.url(), `${base}/portal`);
    await second.context.close();
    // The refused exchange's 403 is the page's expected answer, which Chromium logs as a failed resource.
    problems = problems.filter((p) => !p.includes('403'));
  });

  it("a failed delivery's explanation, attempts and exact body show", async () => {
    const { context, page } = await openPortal(full.headers);
    await page.getByRole('link', { name: failed[0] }).click();
    await page.getByRole('heading', { name: /Why it is here: failed/ }).waitFor();
    const body = await partnerCall(base, full.headers, 'GET', `/webhooks/${failed[0]}/body`);
    assert.equal(await page.getByLabel('Body').textContent(), body.text);
    assert.equal(await page.getByRole('table', { name: 'Attempts' }).locator('tbody tr').count(), 4);
    await page.getByRole('cell', { name: 'no such customer' }).first().waitFor();
    if (SCREENSHOTS) await page.screenshot({ path: path.join(SCREENSHOTS, 'portal-delivery.png'), fullPage: true });
    await context.close();
  });

  it("a recovery's preview shows its count; the recovery runs to the end", async () => {
    partnerStatus = 204;
    const { context, page } = await openPortal(full.headers);
    await visit(page, '#/recovery', 'Recover deliveries');
    await page.getByRole('button', { name: 'Preview' }).click();
    await page.getByText('Would redeliver 2 webhooks and skip 0.').waitFor();
    await page.getByRole('button', { name: 'Start recovery' }).click();
    await page.getByRole('heading', { name: 'Recovery completed' }).waitFor({ timeout: 60_000 });
    await eventually(
      'both redeliveries delivered',
      async () => (await page.locator('dd').nth(4).textContent()) === '2',
      30_000,
    );
    await context.close();
  });

  it('pause and resume change the state; a rotation shows the new secret once', async () => {
    const { context, page } = await openPortal(full.headers);
    await visit(page, '#/endpoint', 'Endpoint');
    await page.getByLabel('Reason').fill('deploying v2');
    await page.getByRole('button', { name: 'Pause deliveries' }).click();
    await page.getByText('Paused by app:portal-app: “deploying v2”').waitFor();
    assert.equal(await page.locator('dd strong').textContent(), 'paused');
    await page.getByRole('button', { name: 'Resume deliveries' }).click();
    await page.getByText('Not paused.').waitFor();
    assert.equal(await page.locator('dd strong').textContent(), 'active');

    await page.getByRole('button', { name: 'Rotate the signing secret' }).click();
    const secret = page.getByLabel('New signing secret');
    await secret.waitFor();
    const shown = (await secret.textContent())!;
    assert.match(shown, /^whsec_[A-Za-z0-9+/=]{40,}$/);
    await visit(page, '#/health', 'Health');
    await visit(page, '#/endpoint', 'Endpoint');
    assert.ok(!(await page.content()).includes(shown), 'the secret is shown once only');
    await context.close();
  });

  it('a read-only app is offered no write control on any page', async () => {
    const { context, page } = await openPortal(reader.headers);
    assert.deepEqual(await page.locator('#nav a').allTextContents(), [
      'Deliveries',
      'Health',
      'Event catalog',
      'Audit',
    ]);
    for (const [hash, heading] of [
      ['#/deliveries', 'Deliveries'],
      [`#/webhooks/${failed[0]}`, /Delivery company\/signup/],
      ['#/health', 'Health'],
      ['#/catalog', 'Event catalog'],
      ['#/audit', 'Audit'],
    ] as const) {
      await visit(page, hash, heading);
      assert.deepEqual(
        await page.locator('main button').allTextContents(),
        hash === '#/deliveries' ? ['Filter'] : [],
        hash,
      );
    }
    await visit(page, '#/endpoint', 'Deliveries');
    await context.close();
  });

  it('axe-core finds no serious or critical violation on any page, at a desktop and a phone width', async () => {
    const found: string[] = [];
    for (const viewport of [
      { width: 1280, height: 900 },
      { width: 375, height: 740 },
    ]) {
      const { context, page } = await newPage(viewport);
      await page.goto(await linkFor(full.headers));
      await page.locator('#nav a').first().waitFor();
      for (const [name, heading] of [...PAGES, [`webhooks/${failed[0]}`, /Delivery company/] as const]) {
        await visit(page, `#/${name}`, heading);
        await page.waitForLoadState('networkidle');
        found.push(...(await seriousViolations(page)).map((v) => `${viewport.width}px #/${name}: ${v}`));
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
        assert.ok(overflow <= 0, `#/${name} at ${viewport.width}px is ${overflow}px too wide`);
      }
      if (SCREENSHOTS && viewport.width === 375)
        await page.screenshot({ path: path.join(SCREENSHOTS, 'portal-phone.png') });
      await context.close();
    }
    assert.deepEqual(found, []);
  });

  it('the keyboard alone reaches every control of every page, and pauses with Enter', async () => {
    const { context, page } = await openPortal(full.headers);
    for (const [name, heading] of [...PAGES, [`webhooks/${failed[0]}`, /Delivery company/] as const]) {
      await visit(page, `#/${name}`, heading);
      await page.waitForLoadState('networkidle');
      const controls = await page.evaluate(() => {
        const all = [
          ...document.querySelectorAll('a[href], button, input, select, summary, [tabindex="0"]'),
        ] as HTMLElement[];
        // What a person can reach: enabled, shown, and not folded inside a closed <details>.
        const usable = all.filter(
          (e) =>
            !(e as HTMLButtonElement).disabled &&
            e.offsetParent !== null &&
            !e.closest('details:not([open]) > :not(summary)'),
        );
        usable.forEach((e, i) => e.setAttribute('data-control', String(i)));
        return usable.length;
      });
      const reached = new Set<string>();
      await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
      await page.locator('body').focus();
      // A date and time field takes a Tab per part, so the loop runs until every control was reached (or 300).
      for (let i = 0; i < 300 && reached.size < controls; i++) {
        await page.keyboard.press('Tab');
        const id = await page.evaluate(() => document.activeElement?.getAttribute('data-control'));
        if (id) reached.add(id);
      }
      assert.equal(reached.size, controls, `#/${name}: Tab reached ${reached.size} of ${controls} controls`);
    }
    await visit(page, '#/endpoint', 'Endpoint');
    await page.getByLabel('Reason').focus();
    await page.keyboard.type('keyboard pause');
    await page.keyboard.press('Enter');
    await page.getByText('Paused by app:portal-app: “keyboard pause”').waitFor();
    await page.getByRole('button', { name: 'Resume deliveries' }).focus();
    await page.keyboard.press('Enter');
    await page.getByText('Not paused.').waitFor();
    await context.close();
  });

  it("revoking the app ends the page's session within 5 s", async () => {
    const { context, page } = await openPortal(full.headers);
    const began = Date.now();
    assert.equal(await revokePartnerApp(stack.db.knex, 'portal-app'), 'revoked');
    await page.getByRole('heading', { name: 'Your session has ended' }).waitFor({ timeout: 5_000 });
    console.log(`      ended on the page after ${Date.now() - began} ms`);
    assert.equal(await page.locator('#nav a').count(), 0);
    await context.close();
    problems = problems.filter((p) => !p.includes('403'));
  });
});
