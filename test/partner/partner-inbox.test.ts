import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { Webhook } from 'standardwebhooks';
import { webhookHeaders } from '../../events/delivery-headers';
import { webhookSignature } from '../../events/webhook-signature';
import { startPartnerInbox, type PartnerInbox } from '../../api/partner-inbox/start';
import { INBOX_CAPACITY, type InboxDelivery } from '../../api/partner-inbox/delivery-ring';
import jobNew from '../../examples/events/job-new.json';
import { capturingLogger } from '../support/capturing-logger';
import { PARTNER_TOKEN } from '../support/tokens';

const SECRET = randomBytes(32);
const OTHER_SECRET = randomBytes(32);
const BODY = JSON.stringify(jobNew);

/** The request the worker sends: its headers, its signature, its body. */
function signedRequest(webhookId: string, body = BODY, { token = PARTNER_TOKEN, secrets = [SECRET] } = {}) {
  const headers = webhookHeaders(token, webhookId, Date.now());
  headers['webhook-signature'] = webhookSignature(secrets, webhookId, headers['webhook-timestamp'], body);
  return { headers, body };
}

describe('the partner inbox', function () {
  let inbox: PartnerInbox;
  let logs: ReturnType<typeof capturingLogger>;
  const post = (request: { headers: Record<string, string>; body: string }) =>
    fetch(inbox.endpoint, { method: 'POST', ...request });
  const deliveries = async (): Promise<InboxDelivery[]> =>
    ((await (await fetch(`${inbox.url}deliveries`)).json()) as { deliveries: InboxDelivery[] }).deliveries;
  /** GET /deliveries with the Host header a browser sends for `hostname` (fetch may not set Host). */
  const statusWithHost = (hostname: string) =>
    new Promise<number | undefined>((resolve, reject) => {
      const { port } = new URL(inbox.url);
      http
        .get({ host: '127.0.0.1', port, path: '/deliveries', headers: { host: `${hostname}:${port}` } }, (res) => {
          res.resume();
          resolve(res.statusCode);
        })
        .on('error', reject);
    });
  const find = async (webhookId: string) => (await deliveries()).find((d) => d.webhook_id === webhookId)!;

  beforeEach(async () => {
    logs = capturingLogger();
    // The second secret stands for a rotation: a partner accepts a request that either one signed.
    inbox = await startPartnerInbox({
      token: PARTNER_TOKEN,
      signingSecrets: [SECRET, OTHER_SECRET],
      logger: logs.logger,
      port: 0,
    });
  });
  afterEach(async () => inbox.close());

  it('listens on 127.0.0.1 only, at /webhooks', () => {
    assert.match(inbox.url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
    assert.equal(inbox.endpoint, `${inbox.url}webhooks`);
  });

  it('answers a signed delivery with 204 and shows it as JSON: checks valid, body as sent, token masked', async () => {
    const request = signedRequest('inbox-valid-1');
    const response = await post(request);
    assert.equal(response.status, 204);
    assert.equal(await response.text(), '');
    const response2 = await fetch(`${inbox.url}deliveries`);
    assert.equal(response2.status, 200);
    assert.match(response2.headers.get('content-type')!, /^application\/json/);
    const [delivery] = ((await response2.json()) as { deliveries: InboxDelivery[] }).deliveries;
    assert.deepEqual(delivery.checks, { authorization: 'valid', signature: 'valid' });
    assert.equal(delivery.body, BODY);
    assert.equal(delivery.webhook_id, 'inbox-valid-1');
    assert.equal(delivery.webhook_timestamp, request.headers['webhook-timestamp']);
    assert.equal(delivery.event_type, 'job');
    assert.equal(delivery.action, 'new');
    assert.equal(delivery.headers.authorization, 'Bearer ***');
    assert.equal(delivery.headers['webhook-signature'], request.headers['webhook-signature']);
    assert.equal(delivery.headers['content-type'], 'application/json');
    assert.ok(Math.abs(Date.parse(delivery.received_at) - Date.now()) < 5000);
    assert.ok(!JSON.stringify(await deliveries()).includes(PARTNER_TOKEN), 'the token never leaves the request');
    const logged = logs.lines.join('');
    assert.ok(!logged.includes(PARTNER_TOKEN));
    assert.match(logged, /"msg":"partner inbox received a webhook"/);
    assert.match(logged, /"authorizationCheck":"valid","signatureCheck":"valid"/);
  });

  it('accepts a request signed with the other secret of a rotation, and agrees with the standardwebhooks library', async () => {
    await post(signedRequest('inbox-rotated', BODY, { secrets: [OTHER_SECRET] }));
    assert.equal((await find('inbox-rotated')).checks.signature, 'valid');
    const timestamp = new Date();
    const signature = new Webhook(OTHER_SECRET.toString('base64')).sign('inbox-library', timestamp, BODY);
    const headers = {
      ...webhookHeaders(PARTNER_TOKEN, 'inbox-library', timestamp.getTime()),
      'webhook-signature': signature,
    };
    await post({ headers, body: BODY });
    assert.equal((await find('inbox-library')).checks.signature, 'valid');
  });

  it('shows a tampered body as signature "invalid", no signature as "not signed", a wrong or absent token as such', async () => {
    const tampered = signedRequest('inbox-tampered');
    assert.equal((await post({ ...tampered, body: tampered.body.replace('Senior', 'Junior') })).status, 204);
    const unsigned = signedRequest('inbox-unsigned');
    delete unsigned.headers['webhook-signature'];
    await post(unsigned);
    await post(signedRequest('inbox-wrong-token', BODY, { token: 'not-the-token' }));
    const anonymous = signedRequest('inbox-no-token');
    delete anonymous.headers.authorization;
    await post(anonymous);
    await post(signedRequest('inbox-unknown-secret', BODY, { secrets: [randomBytes(32)] }));

    assert.deepEqual((await find('inbox-tampered')).checks, { authorization: 'valid', signature: 'invalid' });
    assert.deepEqual((await find('inbox-unsigned')).checks, { authorization: 'valid', signature: 'not signed' });
    assert.deepEqual((await find('inbox-wrong-token')).checks, { authorization: 'invalid', signature: 'valid' });
    assert.deepEqual((await find('inbox-no-token')).checks, { authorization: 'missing', signature: 'valid' });
    assert.equal((await find('inbox-no-token')).headers.authorization, undefined);
    assert.equal((await find('inbox-unknown-secret')).checks.signature, 'invalid');
    assert.deepEqual(
      (await deliveries()).map((d) => d.webhook_id),
      ['inbox-unknown-secret', 'inbox-no-token', 'inbox-wrong-token', 'inbox-unsigned', 'inbox-tampered'],
      'newest first',
    );
  });

  it('records a body that is not an envelope as received', async () => {
    await post({ headers: { 'webhook-id': 'inbox-not-json' }, body: 'not json' });
    const delivery = await find('inbox-not-json');
    assert.equal(delivery.body, 'not json');
    assert.equal(delivery.event_type, null);
    assert.equal(delivery.action, null);
    assert.deepEqual(delivery.checks, { authorization: 'missing', signature: 'not signed' });
  });

  it('shows the deliveries on an HTML page, newest first, every received value escaped', async () => {
    const empty = await fetch(inbox.url);
    assert.match(await empty.text(), /No delivery yet/);
    await post(signedRequest('inbox-page-first'));
    const hostile = JSON.stringify({ event_type: 'job', action: 'new', data: { title: '<script>alert(1)</script>' } });
    await post(signedRequest('inbox-page-<b>id</b>', hostile));
    const response = await fetch(inbox.url);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.match(response.headers.get('content-security-policy')!, /^default-src 'none'/);
    const page = await response.text();
    assert.ok(page.includes('job/new'));
    assert.ok(page.includes('inbox-page-first'));
    assert.ok(page.includes('inbox-page-&lt;b&gt;id&lt;/b&gt;'));
    assert.ok(page.includes('&lt;script&gt;alert(1)&lt;/script&gt;'));
    assert.ok(!page.includes('<script>'), 'no markup from a delivery');
    assert.ok(!page.includes('<b>'), 'no markup from a header');
    assert.ok(page.includes('Senior Backend Engineer'), 'the body is shown');
    assert.ok(page.includes('authorization: valid') && page.includes('signature: valid'));
    assert.ok(page.includes('Bearer ***') && !page.includes(PARTNER_TOKEN));
    assert.ok(page.indexOf('inbox-page-&lt;b&gt;') < page.indexOf('inbox-page-first'), 'newest first');
    assert.doesNotMatch(page, /(src|href)="(https?:)?\/\//, 'no external asset');
  });

  it(`keeps only the last ${INBOX_CAPACITY} deliveries`, async function () {
    this.timeout(30_000);
    for (let i = 0; i < INBOX_CAPACITY + 5; i++) await post(signedRequest(`inbox-ring-${i}`));
    const ids = (await deliveries()).map((d) => d.webhook_id);
    assert.equal(ids.length, INBOX_CAPACITY);
    assert.equal(ids[0], `inbox-ring-${INBOX_CAPACITY + 4}`);
    assert.equal(ids[INBOX_CAPACITY - 1], 'inbox-ring-5');
  });

  it('answers other methods on its paths with 405 and Allow, unknown paths with 404, other host names with 403', async () => {
    const put = await fetch(inbox.endpoint, { method: 'PUT', body: '{}' });
    assert.equal(put.status, 405);
    assert.equal(put.headers.get('allow'), 'POST');
    const getHook = await fetch(inbox.endpoint);
    assert.equal(getHook.status, 405);
    assert.equal(getHook.headers.get('allow'), 'POST');
    for (const route of ['', 'deliveries']) {
      const response = await fetch(`${inbox.url}${route}`, { method: 'DELETE' });
      assert.equal(response.status, 405, route);
      assert.equal(response.headers.get('allow'), 'HEAD, GET', route);
    }
    assert.equal((await fetch(`${inbox.url}nothing-here`)).status, 404);
    assert.equal((await fetch(`${inbox.url}nothing-here`, { method: 'POST' })).status, 404);
    assert.equal(await statusWithHost('localhost'), 200);
    assert.equal(await statusWithHost('rebound.example'), 403);
    assert.equal((await deliveries()).length, 0, 'no refused request was recorded');
  });
});
