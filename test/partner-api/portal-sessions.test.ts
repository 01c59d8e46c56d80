// The portal's access on the real API and PostgreSQL: a one-time link made with the app's key, its exchange for an
// HttpOnly SameSite=Strict cookie, the refusals (used, expired, unknown), CSRF on writes, narrowed scopes, sign-out
// and revocation, the page's headers; every answer against the document, and no token in a log line.
import assert from 'node:assert/strict';
import { openApiDocument } from '../../api/openapi/document';
import { startApiServer, type ApiServer } from '../../api/server';
import { revokePartnerApp } from '../../cli/apps-store';
import { loadConfig } from '../../lib/config';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { capturingLogger } from '../support/capturing-logger';
import { documentedAnswers } from '../support/openapi';
import { insertCompany } from '../listings/support';
import { partnerApp, partnerCall } from './support';

interface Session {
  cookie: string;
  csrf: string;
  setCookies: string[];
}

describe('partner API: portal links and sessions', function () {
  this.timeout(30_000);
  let db: TestDatabase;
  let api: ApiServer;
  let base: string;
  let headers: Record<string, string>;
  const logs = capturingLogger();
  const documented = documentedAnswers(openApiDocument(loadConfig({})));

  before(async () => {
    db = await createTestDatabase();
    api = await startApiServer(
      { config: loadConfig({ TRUST_PROXY: 'true' }), knex: db.knex, logger: logs.logger },
      0,
      '127.0.0.1',
    );
    base = api.url;
    await insertCompany(db.knex, 'acme');
    headers = (await partnerApp(db.knex, 'portal-app', ['acme'])).headers;
  });
  after(async () => {
    await api?.close();
    await db?.drop();
  });

  const makeLink = async (body: unknown = {}) => {
    const res = await partnerCall(base, headers, 'POST', '/portal-sessions', body);
    assert.equal(res.status, 201, res.text);
    documented('/partner/v1/portal-sessions', 'post', res);
    return { ...res.body, token: decodeURIComponent(new URL(res.body.url).hash.slice('#token='.length)) };
  };
  const open = async (token: unknown, extra: Record<string, string> = {}) => {
    const res = await fetch(`${base}/partner/v1/portal-sessions/open`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...extra },
      body: JSON.stringify({ token }),
    });
    const text = await res.text();
    return {
      status: res.status,
      body: JSON.parse(text),
      text,
      headers: Object.fromEntries(res.headers),
      setCookies: res.headers.getSetCookie(),
    };
  };
  const session = async (body: unknown = {}): Promise<Session> => {
    const opened = await open((await makeLink(body)).token);
    assert.equal(opened.status, 201, opened.text);
    const value = (name: string) =>
      opened.setCookies
        .find((c) => c.startsWith(`${name}=`))!
        .split(';')[0]
        .slice(name.length + 1);
    return { cookie: value('portal_session'), csrf: value('portal_csrf'), setCookies: opened.setCookies };
  };
  const asSession = async (s: Session, method: string, path: string, body?: unknown, csrf?: string) => {
    const res = await fetch(`${base}/partner/v1${path}`, {
      method,
      headers: {
        cookie: `portal_session=${s.cookie}; portal_csrf=${s.csrf}`,
        ...(csrf !== undefined && { 'x-csrf-token': csrf }),
        ...(body !== undefined && { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return {
      status: res.status,
      text,
      body: text ? JSON.parse(text) : undefined,
      headers: Object.fromEntries(res.headers),
      setCookies: res.headers.getSetCookie(),
    };
  };

  it('a link: 201 with the portal URL (token in the fragment), 10 minutes, the app scopes; audited portal.link', async () => {
    const before = Date.now();
    const link = await makeLink();
    assert.match(link.url, /^http:\/\/127\.0\.0\.1:\d+\/portal#token=[0-9a-f-]{36}\.[\w-]{43}$/);
    assert.deepEqual(link.scopes, ['listings', 'deliveries:read', 'deliveries:write', 'endpoint:manage']);
    const ttl = Date.parse(link.expires_at) - before;
    assert.ok(ttl > 595_000 && ttl <= 601_000, `expires in ${ttl} ms`);
    const [row] = await db.knex('audit_events').where({ action: 'portal.link' }).orderBy('id', 'desc').limit(1);
    assert.equal(row.actor, 'app:portal-app');
    assert.equal(row.target, 'portal-app');
    assert.doesNotMatch(JSON.stringify(row), new RegExp(link.token.split('.')[1]));
    const stored = await db
      .knex('portal_links')
      .where({ id: link.token.split('.')[0] })
      .first();
    assert.equal(stored.secret_hash.length, 32);
    assert.doesNotMatch(JSON.stringify(stored), new RegExp(link.token.split('.')[1]));
  });

  it('opening it once: 201, an HttpOnly SameSite=Strict session cookie and a readable CSRF cookie, for an hour', async () => {
    const link = await makeLink();
    const opened = await open(link.token);
    assert.equal(opened.status, 201);
    documented('/partner/v1/portal-sessions/open', 'post', opened);
    assert.equal(opened.headers['cache-control'], 'no-store');
    const hour = Date.parse(opened.body.expires_at) - Date.now();
    assert.ok(hour > 3_590_000 && hour <= 3_600_500, `${hour} ms`);
    const [sessionCookie, csrfCookie] = ['portal_session', 'portal_csrf'].map((name) =>
      opened.setCookies.find((c) => c.startsWith(`${name}=`))!,
    );
    assert.match(
      sessionCookie,
      /^portal_session=[0-9a-f-]{36}\.[\w-]{43}; path=\/; expires=[^;]+; samesite=strict; httponly$/,
    );
    assert.match(csrfCookie, /^portal_csrf=[\w-]{43}; path=\/; expires=[^;]+; samesite=strict$/);
    const again = await open(link.token);
    assert.equal(again.status, 403);
    documented('/partner/v1/portal-sessions/open', 'post', again);
    assert.deepEqual(again.body, {
      detail: 'This portal link was already used: ask for a new one.',
      reason: 'link_used',
    });
    assert.deepEqual(again.setCookies, []);
  });

  it('under https (X-Forwarded-Proto with TRUST_PROXY) both cookies are Secure', async () => {
    const opened = await open((await makeLink()).token, { 'x-forwarded-proto': 'https' });
    assert.equal(opened.status, 201);
    for (const cookie of opened.setCookies) assert.match(cookie, /; secure/);
  });

  it('refuses an expired link, a wrong secret and what is not a token, each saying so; a bad body is 400', async () => {
    const expired = await makeLink();
    await db
      .knex('portal_links')
      .where({ id: expired.token.split('.')[0] })
      .update({
        created_at: db.knex.raw("now() - interval '11 minutes'"),
        expires_at: db.knex.raw("now() - interval '1 minute'"),
      });
    assert.deepEqual((await open(expired.token)).body, {
      detail: 'This portal link has expired: ask for a new one.',
      reason: 'link_expired',
    });
    const unknown = { detail: 'This is not a valid portal link: ask for a new one.', reason: 'link_unknown' };
    const fresh = await makeLink();
    for (const token of [
      `${fresh.token.split('.')[0]}.${'A'.repeat(43)}`,
      'garbage',
      '',
      `${'0'.repeat(36)}.x`,
      '\u0000.x',
    ]) {
      const res = await open(token);
      assert.equal(res.status, 403, token);
      assert.deepEqual(res.body, unknown);
    }
    assert.equal((await open(fresh.token)).status, 201, 'the wrong secrets did not use the link up');
    const bad = await open(42);
    assert.equal(bad.status, 400);
    documented('/partner/v1/portal-sessions/open', 'post', bad);
  });

  it('a session reads as its app; a write needs X-CSRF-Token, the right one; a session cannot make links', async () => {
    const s = await session();
    const app = await asSession(s, 'GET', '/app');
    assert.equal(app.status, 200);
    assert.deepEqual(app.body, {
      app_id: 'portal-app',
      name: 'portal-app name',
      scopes: ['listings', 'deliveries:read', 'deliveries:write', 'endpoint:manage'],
      company_ids: ['acme'],
    });
    const csrfFailed = { detail: 'CSRF Failed: CSRF token missing or incorrect.', reason: 'csrf_failed' };
    for (const csrf of [undefined, '', 'x'.repeat(43)]) {
      const refused = await asSession(s, 'POST', '/endpoint/pause', { reason: 'deploy' }, csrf);
      assert.equal(refused.status, 403);
      assert.deepEqual(refused.body, csrfFailed);
    }
    assert.equal((await db.knex('partner_gate').whereNotNull('partner_paused_at').count({ n: '*' }))[0].n, 0);
    const paused = await asSession(s, 'POST', '/endpoint/pause', { reason: 'deploy' }, s.csrf);
    assert.equal(paused.status, 200, paused.text);
    assert.equal(paused.body.pauses[0].paused_by, 'app:portal-app');
    assert.equal((await asSession(s, 'POST', '/endpoint/resume', undefined, s.csrf)).status, 200);
    const link = await asSession(s, 'POST', '/portal-sessions', {}, s.csrf);
    assert.equal(link.status, 403);
    assert.deepEqual(link.body, {
      detail: "A portal session cannot make portal links: use the app's key.",
      reason: 'key_required',
    });
  });

  it('a link with fewer scopes opens a session with those only; a scope the app lacks is 400', async () => {
    const s = await session({ scopes: ['deliveries:read'] });
    assert.deepEqual((await asSession(s, 'GET', '/app')).body.scopes, ['deliveries:read']);
    const refused = await asSession(s, 'POST', '/endpoint/pause', { reason: 'x' }, s.csrf);
    assert.equal(refused.status, 403);
    assert.equal(refused.body.reason, 'missing_scope');
    const reader = await partnerApp(db.knex, 'reader-app', ['acme'], ['deliveries:read']);
    const wider = await partnerCall(base, reader.headers, 'POST', '/portal-sessions', { scopes: ['endpoint:manage'] });
    assert.equal(wider.status, 400);
    documented('/partner/v1/portal-sessions', 'post', wider);
    assert.match(wider.body.detail, /does not hold endpoint:manage/);
  });

  it('sign-out ends the session and clears its cookies; revoking the app ends every session at once', async () => {
    const s = await session();
    const out = await asSession(s, 'DELETE', '/portal-sessions/current', undefined, s.csrf);
    assert.equal(out.status, 204);
    assert.equal(out.text, '');
    assert.ok(out.setCookies.some((c) => /^portal_session=; path=\/; expires=Thu, 01 Jan 1970/.test(c)));
    const ended = { detail: 'Your portal session has ended: open a new portal link.', reason: 'session_ended' };
    assert.deepEqual((await asSession(s, 'GET', '/app')).body, ended);
    const keyed = await partnerCall(base, headers, 'DELETE', '/portal-sessions/current');
    assert.equal(keyed.status, 400);

    const [a, b] = [await session(), await session()];
    const pending = await makeLink();
    assert.equal((await asSession(a, 'GET', '/webhooks')).status, 200);
    assert.equal(await revokePartnerApp(db.knex, 'portal-app'), 'revoked');
    for (const s2 of [a, b]) {
      const res = await asSession(s2, 'GET', '/webhooks');
      assert.equal(res.status, 403);
      assert.deepEqual(res.body, ended);
    }
    assert.equal((await open(pending.token)).body.reason, 'link_unknown');
    const open_ = await db
      .knex('portal_sessions')
      .where({ app_id: 'portal-app' })
      .whereNull('ended_at')
      .count({ n: '*' });
    assert.equal(open_[0].n, 0);
  });

  it('GET /portal: the page with a CSP without inline script; its assets; nothing else', async () => {
    const page = await fetch(`${base}/portal`);
    assert.equal(page.status, 200);
    assert.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.equal(
      page.headers.get('content-security-policy'),
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    assert.doesNotMatch(await page.text(), /<script>|<style>| style=| on\w+=/);
    const script = await fetch(`${base}/portal/assets/main.js`);
    assert.equal(script.status, 200);
    assert.equal(script.headers.get('content-type'), 'application/javascript; charset=utf-8');
    for (const path of ['/portal/assets/nothing.js', '/portal/assets/..%2Fpackage.json', '/portal/assets/main.d.ts'])
      assert.equal((await fetch(`${base}${path}`)).status, 404, path);
  });

  it('no token, session or CSRF value appears in a log line', async () => {
    headers = (await partnerApp(db.knex, 'logged-app', ['acme'])).headers;
    const link = await makeLink();
    const opened = await open(link.token);
    const text = logs.lines.join('\n');
    for (const secret of [
      link.token.split('.')[1],
      ...opened.setCookies.map((c) => c.split(';')[0].split('=')[1].split('.').at(-1)!),
    ])
      assert.ok(!text.includes(secret), 'a secret is in the logs');
  });
});
