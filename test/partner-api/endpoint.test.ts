// The partner API's endpoint (`endpoint:manage`) and test events' refusals (`deliveries:write`), on the real API and
// PostgreSQL: every answer asserted whole and against the document, the operator's status beside it, the audit
// rows with the app as actor. The same pause, rate and a test event on real processes: endpoint-drill.test.ts.
import assert from 'node:assert/strict';
import { openApiDocument } from '../../api/openapi/document';
import { loadConfig } from '../../lib/config';
import { internalCall, startTestApi, type TestApi } from '../support/api';
import { documentedAnswers } from '../support/openapi';
import { insertCompany } from '../listings/support';
import { partnerApp, partnerCall } from './support';

const TOKEN = 'endpoint-test-operator-token-0123456789';
const ENDPOINT = '/partner/v1/endpoint';

describe('partner API: the endpoint, its pause, resume and rate; test events refused', () => {
  let stack: TestApi;
  let base: string;
  let headers: Record<string, string>;
  const documented = documentedAnswers(openApiDocument(loadConfig({})));
  const operatorCall = (method: string, path: string, body?: unknown) =>
    internalCall(`${base}/internal/v1/partner${path}`, TOKEN, method, body);
  const auditRows = () =>
    stack.db
      .knex('audit_events')
      .where('actor', 'like', 'app:%')
      .orderBy('id')
      .select('actor', 'action', 'target', 'parameters', 'outcome');

  before(async () => {
    stack = await startTestApi({
      INTERNAL_API_TOKEN: TOKEN,
      PARTNER_MAX_PER_SECOND: '40',
      PARTNER_SIGNING_SECRETS: `whsec_${Buffer.alloc(32, 7).toString('base64')}`,
      TEMPORAL_TASK_QUEUE: 'endpoint-test-queue',
    });
    base = stack.api.url;
    await insertCompany(stack.db.knex, 'acme');
    await insertCompany(stack.db.knex, 'globex');
    headers = (await partnerApp(stack.db.knex, 'endpoint-app', ['acme'])).headers;
  });
  after(async () => stack.close());

  it('GET /partner/v1/endpoint: the state, the rate and the cap, the breaker, held, the secrets by id only', async () => {
    const res = await partnerCall(base, headers, 'GET', '/endpoint');
    assert.equal(res.status, 200);
    documented(ENDPOINT, 'get', res);
    assert.deepEqual(res.body, {
      state: 'active',
      since: null,
      pauses: [],
      max_per_second: null,
      deployment_max_per_second: 40,
      rate_in_force: 40,
      retry_after_until: null,
      breaker: { state: 'closed', consecutive_failures: 0, failures_to_trip: 10, next_probe_at: null },
      held: 0,
      signing_secrets: [
        { id: 'config-1', created_at: null, expires_at: null, last_used_at: null, source: 'configuration' },
      ],
    });
    assert.doesNotMatch(res.text, /whsec_|BwcH/);
  });

  it("pause, pause again (200, the first pause kept), the operator's pause outlives a resume (409), its resume ends both", async () => {
    const paused = await partnerCall(base, headers, 'POST', '/endpoint/pause', { reason: ' deploying v2 ' });
    assert.equal(paused.status, 200);
    documented(`${ENDPOINT}/pause`, 'post', paused);
    assert.equal(paused.body.state, 'paused');
    assert.equal(paused.body.since, paused.body.pauses[0].since);
    assert.deepEqual(paused.body.pauses, [
      { paused_by: 'app:endpoint-app', reason: 'deploying v2', since: paused.body.pauses[0].since },
    ]);
    const again = await partnerCall(base, headers, 'POST', '/endpoint/pause', { reason: 'other' });
    assert.deepEqual([again.status, again.body.pauses], [200, paused.body.pauses]);

    // The operator sees the partner's pause, by the app, beside its own.
    assert.equal((await operatorCall('POST', '/pause', { reason: 'incident 42' })).status, 200);
    const status = await operatorCall('GET', '');
    assert.equal(status.status, 200);
    documented('/internal/v1/partner', 'get', status);
    assert.deepEqual(
      [status.body.state, status.body.reason, status.body.partner_pause],
      ['paused', 'incident 42', { paused_by: 'app:endpoint-app', reason: 'deploying v2', since: paused.body.since }],
    );
    const shown = await partnerCall(base, headers, 'GET', '/endpoint');
    assert.deepEqual(
      shown.body.pauses.map((p: { paused_by: string; reason: string }) => [p.paused_by, p.reason]),
      [
        ['operator', 'incident 42'],
        ['app:endpoint-app', 'deploying v2'],
      ],
    );

    const refused = await partnerCall(base, headers, 'POST', '/endpoint/resume');
    assert.equal(refused.status, 409);
    documented(`${ENDPOINT}/resume`, 'post', refused);
    assert.deepEqual(refused.body, {
      detail:
        'An operator paused deliveries ("incident 42"): only the operator\'s resume ends it, and it ends your pause too.',
      reason: 'paused_by_operator',
    });
    assert.equal(
      (await partnerCall(base, headers, 'GET', '/endpoint')).body.pauses.length,
      2,
      'the 409 changed nothing',
    );

    const resumed = await operatorCall('POST', '/resume');
    assert.deepEqual([resumed.body.state, resumed.body.partner_pause], ['active', null]);
    const after = await partnerCall(base, headers, 'GET', '/endpoint');
    assert.deepEqual([after.body.state, after.body.pauses], ['active', []]);

    // The partner's own resume ends its own pause; resuming again changes nothing.
    await partnerCall(base, headers, 'POST', '/endpoint/pause', { reason: 'again' });
    for (let i = 0; i < 2; i++) {
      const res = await partnerCall(base, headers, 'POST', '/endpoint/resume');
      assert.deepEqual([res.status, res.body.state, res.body.pauses], [200, 'active', []]);
    }
  });

  it('PATCH sets the rate up to the cap; above it 400 naming the cap; null for the cap; bad bodies 400/415', async () => {
    const limited = await partnerCall(base, headers, 'PATCH', '/endpoint', { max_per_second: 12 });
    assert.equal(limited.status, 200);
    documented(ENDPOINT, 'patch', limited);
    assert.deepEqual(
      [limited.body.max_per_second, limited.body.deployment_max_per_second, limited.body.rate_in_force],
      [12, 40, 12],
    );
    const status = await operatorCall('GET', '');
    assert.deepEqual(
      [status.body.max_per_second, status.body.partner_max_per_second, status.body.rate_in_force],
      [40, 12, 12],
    );

    const above = await partnerCall(base, headers, 'PATCH', '/endpoint', { max_per_second: 41 });
    assert.equal(above.status, 400);
    documented(ENDPOINT, 'patch', above);
    assert.deepEqual(above.body, {
      detail: "max_per_second is above the deployment's cap of 40 per second.",
      errors: [{ path: 'max_per_second', message: "must be at most the deployment's cap, 40" }],
    });
    for (const body of [{ max_per_second: 0 }, { max_per_second: 1.5 }, { max_per_second: '5' }, {}, { x: 1 }]) {
      const res = await partnerCall(base, headers, 'PATCH', '/endpoint', body);
      assert.equal(res.status, 400, JSON.stringify(body));
      documented(ENDPOINT, 'patch', res);
    }
    const text = await fetch(`${base}${ENDPOINT}`, { method: 'PATCH', headers, body: 'max=1' });
    assert.equal(text.status, 415);
    assert.equal(
      (await partnerCall(base, headers, 'GET', '/endpoint')).body.max_per_second,
      12,
      'refusals change nothing',
    );

    const reset = await partnerCall(base, headers, 'PATCH', '/endpoint', { max_per_second: null });
    assert.deepEqual([reset.status, reset.body.max_per_second, reset.body.rate_in_force], [200, null, 40]);
  });

  it("test events: an unknown pair is 400 listing the pairs; a company not the app's is 400 listing its own", async () => {
    const cases: Array<[unknown, object]> = [
      [
        { event_type: 'job', action: 'closed' },
        {
          detail: 'No example of job/closed: send one of company/signup, job/new, candidate/new.',
          errors: [{ path: 'event_type', message: 'must be one of company/signup, job/new, candidate/new' }],
        },
      ],
      [
        { event_type: 'job', action: 'new', company_id: 'globex' },
        {
          detail: "company_id must be one of this app's: acme.",
          errors: [{ path: 'company_id', message: 'must be one of acme' }],
        },
      ],
      [
        { event_type: 'job' },
        { detail: 'Invalid request.', errors: [{ path: 'action', message: 'must be a string' }] },
      ],
    ];
    for (const [body, answer] of cases) {
      const res = await partnerCall(base, headers, 'POST', '/test-events', body);
      assert.equal(res.status, 400, JSON.stringify(body));
      documented('/partner/v1/test-events', 'post', res);
      assert.deepEqual(res.body, answer);
    }
    assert.equal(
      await stack.db
        .knex('webhook_events')
        .count('* as n')
        .first()
        .then((r) => Number(r?.n)),
      0,
    );
  });

  it('every write is audited with the app as actor, refusals as failed', async () => {
    const rows = await auditRows();
    const summary = rows.map((r) => `${r.action} ${r.outcome}`);
    assert.deepEqual(summary.slice(0, 3), [
      'endpoint.pause succeeded',
      'endpoint.pause succeeded',
      'endpoint.resume failed',
    ]);
    assert.ok(rows.every((r) => r.actor === 'app:endpoint-app'));
    assert.deepEqual(rows[0].parameters, { reason: 'deploying v2' });
    assert.equal(rows[0].target, 'endpoint-test-queue');
    assert.ok(summary.includes('endpoint.limit failed') && summary.includes('endpoint.limit succeeded'));
    assert.deepEqual(summary.slice(-3), ['test_event.send failed', 'test_event.send failed', 'test_event.send failed']);
  });
});
