// Property-based: whatever text or method a caller sends, every surface of the API answers in its own format
// and never with a 5xx. Text PostgreSQL cannot store is a 400 naming the parameter; a method no route of a
// path has is a 405 with `Allow` (TRACE included, which Node's fetch refuses to send: node:http sends it).
import assert from 'node:assert/strict';
import http from 'node:http';
import fc from 'fast-check';
import { startTestApi, type TestApi } from '../support/api';
import { closedPort } from '../support/partner-server';
import { INTERNAL_TOKEN, CODEC_TOKEN } from '../support/tokens';

const WEBHOOK_ID = '00000000-0000-4000-8000-000000000000';
const AUTH = { authorization: `Bearer ${INTERNAL_TOKEN}` };

interface Reply {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly text: string;
}

/** One request with any method, through node:http. */
function send(base: string, method: string, path: string, headers: Record<string, string> = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const request = http.request(`${base}${path}`, { method, headers, agent: false }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, text }));
    });
    request.on('error', reject);
    request.end();
  });
}

/** One served path of each surface, with the methods its routes answer. */
const SURFACES: readonly { path: string; methods: readonly string[]; headers?: Record<string, string> }[] = [
  { path: '/healthz', methods: ['GET', 'HEAD'] },
  { path: '/readyz', methods: ['GET', 'HEAD'] },
  { path: '/metrics', methods: ['GET', 'HEAD'] },
  { path: '/openapi.json', methods: ['GET', 'HEAD'] },
  { path: '/docs', methods: ['GET', 'HEAD'] },
  { path: '/v1/companies/acme/users/', methods: ['GET', 'HEAD', 'OPTIONS'] },
  { path: '/v1/jobs/j-1/users/', methods: ['GET', 'HEAD', 'OPTIONS'] },
  { path: '/scim/v2/Groups', methods: ['GET', 'HEAD'] },
  { path: `/scim/v2/Users/${WEBHOOK_ID}`, methods: ['GET', 'HEAD'] },
  { path: '/scim/v2/ServiceProviderConfig', methods: ['GET', 'HEAD'] },
  { path: '/internal/v1/webhooks', methods: ['GET', 'HEAD', 'POST'], headers: AUTH },
  { path: `/internal/v1/webhooks/${WEBHOOK_ID}`, methods: ['GET', 'HEAD'], headers: AUTH },
  { path: `/internal/v1/webhooks/${WEBHOOK_ID}/redeliver`, methods: ['POST'], headers: AUTH },
  { path: '/codec/decode', methods: ['POST'], headers: { authorization: `Bearer ${CODEC_TOKEN}` } },
];

/** Methods Node parses, but not CONNECT (a tunnel, not a request to a route). */
const METHODS = http.METHODS.filter((method) => method !== 'CONNECT');

/** Text with a NUL or a lone surrogate somewhere in it: JSON and URLs carry both, PostgreSQL stores neither. */
const unstorableText = fc
  .tuple(fc.string({ maxLength: 8 }), fc.constantFrom('\u0000', '\ud800', '\udfff'), fc.string({ maxLength: 8 }))
  .map(([before, bad, after]) => `${before}${bad}${after}`);

describe('bad input on every surface', function () {
  this.timeout(60_000);
  let service: TestApi;
  let base: string;

  before(async () => {
    service = await startTestApi({
      INTERNAL_API_TOKEN: INTERNAL_TOKEN,
      CODEC_AUTH_TOKEN: CODEC_TOKEN,
      PAYLOAD_ENCRYPTION_KEYS: `fuzz:${Buffer.alloc(32, 1).toString('base64')}`,
      // Nothing here reaches Temporal: every request is refused before it would.
      TEMPORAL_ADDRESS: `127.0.0.1:${await closedPort()}`,
    });
    base = service.api.url;
  });
  after(() => service?.close());

  it('TRACE on a served path of every surface is a 405 with Allow, never 501', async () => {
    for (const surface of SURFACES) {
      const reply = await send(base, 'TRACE', surface.path, surface.headers);
      assert.equal(reply.status, 405, `${surface.path}: ${reply.status} ${reply.text}`);
      const allowed = String(reply.headers.allow).split(/,\s*/);
      for (const method of surface.methods)
        assert.ok(allowed.includes(method), `${surface.path} Allow: ${reply.headers.allow}`);
      assert.ok(!allowed.includes('TRACE'));
    }
  });

  it('any method on any surface: never a 5xx, and a 405 always says what is allowed', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...SURFACES), fc.constantFrom(...METHODS), async (surface, method) => {
        const reply = await send(base, method, surface.path, surface.headers);
        assert.ok(reply.status < 500, `${method} ${surface.path}: ${reply.status} ${reply.text}`);
        if (!surface.methods.includes(method) && method !== 'OPTIONS')
          assert.equal(reply.status, 405, `${method} ${surface.path}: ${reply.status}`);
        if (reply.status === 405) {
          assert.ok(reply.headers.allow, `${method} ${surface.path}: 405 without Allow`);
          assert.ok(!String(reply.headers.allow).split(/,\s*/).includes(method));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('unstorable text in a delivery-log or bulk-redelivery filter is a 400 naming the parameter', async () => {
    const message = 'text PostgreSQL cannot store: a NUL character (\\u0000) or an unpaired surrogate';
    const exact = await send(base, 'GET', '/internal/v1/webhooks?company_id=%00', AUTH);
    assert.deepEqual(
      [exact.status, JSON.parse(exact.text)],
      [400, { detail: 'Invalid filter or paging.', errors: [{ path: 'company_id', message }] }],
    );
    await fc.assert(
      fc.asyncProperty(unstorableText, async (text) => {
        const listed = await send(
          base,
          'GET',
          `/internal/v1/webhooks?company_id=${encodeURIComponent(text.replace(/[\ud800-\udfff]/g, '\u0000'))}`,
          AUTH,
        );
        assert.deepEqual([listed.status, JSON.parse(listed.text).errors], [400, [{ path: 'company_id', message }]]);
        const bulk = await fetch(`${base}/internal/v1/webhooks/redeliver`, {
          method: 'POST',
          headers: { ...AUTH, 'content-type': 'application/json' },
          // JSON carries a lone surrogate as an escape; URLs cannot (encodeURIComponent throws), hence NUL above.
          body: JSON.stringify({ company_id: text }),
        });
        assert.deepEqual(
          [bulk.status, ((await bulk.json()) as { errors: unknown }).errors],
          [400, [{ path: 'company_id', message }]],
        );
      }),
      { numRuns: 100 },
    );
  });

  it('unstorable text in a path or a query of the partner and SCIM APIs is answered in their format, never a 5xx', async () => {
    const paths = (text: string) => {
      const segment = encodeURIComponent(text.replace(/[\ud800-\udfff]/g, '\u0000'));
      return [
        `/v1/companies/${segment}/users/`,
        `/v1/jobs/${segment}/users/`,
        `/v1/companies/acme/users/?cursor=${segment}`,
        `/scim/v2/Groups/${segment}`,
        `/scim/v2/Users/${segment}`,
        `/scim/v2/Groups?filter=${encodeURIComponent(`displayName eq "`)}${segment}%22`,
        `/scim/v2/Users?sortBy=${segment}`,
        `/internal/v1/webhooks/${segment}`,
      ];
    };
    await fc.assert(
      fc.asyncProperty(unstorableText, async (text) => {
        for (const path of paths(text)) {
          const reply = await send(base, 'GET', path, { ...AUTH, 'x-app-id': 'fuzz', 'x-app-key': 'fuzz' });
          assert.ok(reply.status >= 400 && reply.status < 500, `${path}: ${reply.status} ${reply.text}`);
          assert.doesNotThrow(() => JSON.parse(reply.text), `${path}: ${reply.text}`);
        }
      }),
      { numRuns: 50 },
    );
  });
});
