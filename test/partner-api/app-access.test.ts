import assert from 'node:assert/strict';
import { revokePartnerApp } from '../../cli/apps-store';
import { openApiDocument } from '../../api/openapi/document';
import { loadConfig } from '../../lib/config';
import { startTestApi, type TestApi } from '../support/api';
import { insertCompany } from '../listings/support';
import { allScopesBut, call, partnerApp, partnerCall } from './support';

const NOT_PROVIDED = { detail: 'Authentication credentials were not provided.' };
const INCORRECT = { detail: 'Incorrect authentication credentials.' };
const missingScope = (scope: string) => ({
  detail: `This app does not have the scope "${scope}", which this request needs.`,
  reason: 'missing_scope',
});

type Operation = { 'x-app-scope': string | null; tags: string[] };
/** Every partner operation of the document: its method, its path with `{…}` filled, its scope. */
function partnerOperations() {
  const { paths } = openApiDocument(loadConfig({}));
  return Object.entries(paths as Record<string, Record<string, Operation>>)
    .filter(([path]) => path.startsWith('/partner/v1/'))
    .flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([method]) => ['get', 'post', 'patch', 'delete', 'put'].includes(method))
        .map(([method, op]) => ({
          method: method.toUpperCase(),
          path: path.replace('/partner/v1', '').replace(/\{[^}]+\}/g, '6f1c2a7e-0d4b-4c39-9a55-6a0f3e2b9c11'),
          scope: op['x-app-scope'],
          tags: op.tags,
        })),
    );
}

describe('partner API: the app check, scopes and the request budget', () => {
  let stack: TestApi;
  let base: string;
  before(async () => {
    stack = await startTestApi({ PARTNER_API_REQUESTS_PER_MINUTE: '600' });
    base = stack.api.url;
    await insertCompany(stack.db.knex, 'acme');
    await insertCompany(stack.db.knex, 'globex');
  });
  after(async () => stack.close());

  it('GET /partner/v1/app names the app, its scopes and its companies', async () => {
    const app = await partnerApp(stack.db.knex, 'whoami-app', ['globex', 'acme'], ['deliveries:read']);
    const res = await partnerCall(base, app.headers, 'GET', '/app');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, {
      app_id: 'whoami-app',
      name: 'whoami-app name',
      scopes: ['deliveries:read'],
      company_ids: ['acme', 'globex'],
    });
  });

  it('without credentials, with a wrong key or an unknown app: 403 in the listings words', async () => {
    const app = await partnerApp(stack.db.knex, 'creds-app', ['acme']);
    const cases: Array<[Record<string, string>, object]> = [
      [{}, NOT_PROVIDED],
      [{ 'X-App-Id': app.appId }, NOT_PROVIDED],
      [{ 'X-App-Id': app.appId, 'X-App-Key': 'wrong-key-0123456789' }, INCORRECT],
      [{ 'X-App-Id': 'no-such-app', 'X-App-Key': app.key }, INCORRECT],
      [{ 'X-App-Id': 'nul\u0000app', 'X-App-Key': app.key }, INCORRECT],
    ];
    for (const [headers, body] of cases) {
      const res = await call(`${base}/partner/v1/app`, { headers: headers as Record<string, string> }).catch(
        () => undefined,
      );
      // A header with NUL never leaves undici: nothing to check for that one.
      if (!res) continue;
      assert.equal(res.status, 403, JSON.stringify(headers));
      assert.deepEqual(res.body, body);
      assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
    }
  });

  it('a revoked app is refused on its very next request', async () => {
    const app = await partnerApp(stack.db.knex, 'revoked-app', ['acme']);
    assert.equal((await partnerCall(base, app.headers, 'GET', '/app')).status, 200);
    assert.equal(await revokePartnerApp(stack.db.knex, app.appId), 'revoked');
    const res = await partnerCall(base, app.headers, 'GET', '/app');
    assert.equal(res.status, 403);
    assert.deepEqual(res.body, INCORRECT);
  });

  it('every documented partner operation is tagged `partner` and refuses an app without its scope, naming it', async () => {
    const operations = partnerOperations();
    assert.ok(operations.length >= 1);
    for (const op of operations) {
      assert.deepEqual(op.tags, ['partner'], `${op.method} ${op.path}`);
      if (op.scope === null) continue;
      const app = await partnerApp(
        stack.db.knex,
        `lacks-${op.method}-${op.path.replace(/[^a-z]/g, '')}`.slice(0, 90),
        ['acme'],
        allScopesBut(op.scope as never),
      );
      const res = await partnerCall(base, app.headers, op.method, op.path, op.method === 'GET' ? undefined : {});
      assert.equal(res.status, 403, `${op.method} ${op.path}: ${res.text}`);
      assert.deepEqual(res.body, missingScope(op.scope), `${op.method} ${op.path}`);
    }
  });

  it('an unknown path under /partner/v1 is 404, with or without credentials', async () => {
    const app = await partnerApp(stack.db.knex, 'unknown-path-app', ['acme']);
    for (const headers of [app.headers, {}]) {
      const res = await partnerCall(base, headers, 'GET', '/no-such-thing');
      assert.equal(res.status, 404);
      assert.deepEqual(res.body, { detail: 'Not found.' });
    }
  });

  it('the listings need the `listings` scope: 403 naming it for an app without', async () => {
    const app = await partnerApp(stack.db.knex, 'no-listings-app', ['acme'], ['deliveries:read']);
    const res = await call(`${base}/v1/companies/acme/users/`, { headers: app.headers });
    assert.equal(res.status, 403);
    assert.deepEqual(res.body, { detail: missingScope('listings').detail });
  });
});

describe('partner API: the per-app request budget', () => {
  let stack: TestApi;
  before(async () => {
    stack = await startTestApi({ PARTNER_API_REQUESTS_PER_MINUTE: '3' });
    await insertCompany(stack.db.knex, 'acme');
  });
  after(async () => stack.close());

  it('past the budget: 429 with Retry-After; another app keeps its own budget', async () => {
    const spender = await partnerApp(stack.db.knex, 'spender', ['acme']);
    const other = await partnerApp(stack.db.knex, 'other', ['acme']);
    for (let i = 0; i < 3; i++)
      assert.equal((await partnerCall(stack.api.url, spender.headers, 'GET', '/app')).status, 200);
    const refused = await partnerCall(stack.api.url, spender.headers, 'GET', '/app');
    assert.equal(refused.status, 429);
    // 3 a minute: one request back every 20 s.
    assert.equal(refused.headers['retry-after'], '20');
    assert.deepEqual(refused.body, { detail: 'Request budget exceeded: try again in 20 s.', reason: 'over_budget' });
    assert.equal((await partnerCall(stack.api.url, other.headers, 'GET', '/app')).status, 200);
  });
});
