import assert from 'node:assert/strict';
import { startApiServer, type ApiServer } from '../../api/server';
import type { ApiDependencies } from '../../api/context';
import { loadConfig } from '../../lib/config';
import { createLogger } from '../../lib/logger';
import { webhookIds } from '../../application/ingestion/ids';
import { toEnvelope } from '../../events/envelope';
import { insertWebhook } from '../../store/ingestion/webhook-ingestion';
import { Client, Connection } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { NativeConnection } from '@temporalio/worker';
import type { DevServer } from '../../temporal/dev-server';
import { createTemporalGateway } from '../../temporal/gateway';
import { webhookStatusQuery } from '../../workflows/webhooks/messages';
import type { DeliverWebhookInput } from '../../workflows/types';
import { eventually } from '../support/eventually';
import { startTestDevServer, startTestWorker } from '../support/temporal';
import candidateNew from '../fixtures/events/candidate-new.json';
import jobNew from '../fixtures/events/job-new.json';
import { type TestDatabase, useTestDatabase } from '../support/database';
import { answer, closedPort, startPartnerServer } from '../support/partner-server';
import { RecordingGateway } from '../support/recording-gateway';
import { IN_CLEAR } from '../support/at-rest';
import { INTERNAL_TOKEN, PARTNER_TOKEN } from '../support/tokens';

const COMPRESS_TIMERS = require.resolve('../support/compress-timers');
const logger = createLogger('silent');

async function serve(
  db: TestDatabase,
  env: Record<string, string>,
  temporalGateway?: RecordingGateway | ReturnType<typeof createTemporalGateway>,
) {
  const config = loadConfig({ PARTNER_ACCESS_TOKEN: PARTNER_TOKEN, ...env });
  const deps: ApiDependencies = { config, knex: db.knex, logger, temporalGateway };
  return startApiServer(deps, 0, '127.0.0.1');
}

const post = (api: ApiServer, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${api.url}/internal/v1/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

const get = (url: string, token = INTERNAL_TOKEN) => fetch(url, { headers: { authorization: `Bearer ${token}` } });

describe('POST /internal/v1/webhooks', function () {
  this.timeout(30_000);
  const db = useTestDatabase();
  let api: ApiServer;
  let server: DevServer;
  let connection: Connection;
  let client: Client;
  let gateway: RecordingGateway;
  let env: Record<string, string>;
  const rowCount = async () => Number((await db.knex('webhook_events').count({ n: '*' }))[0].n);
  const startedInput = async (workflowId: string): Promise<DeliverWebhookInput> => {
    const history = await client.workflow.getHandle(workflowId).fetchHistory();
    return defaultPayloadConverter.fromPayload(
      history.events![0].workflowExecutionStartedEventAttributes!.input!.payloads![0],
    );
  };
  const runIdOf = async (workflowId: string) => (await client.workflow.getHandle(workflowId).describe()).runId;

  // A fresh dev server per test: workflow ids are the fixtures' event ids, and a server remembers them.
  beforeEach(async () => {
    await db.knex('webhook_events').del();
    server = await startTestDevServer();
    connection = await Connection.connect({ address: server.address });
    client = new Client({ connection });
    env = {
      INTERNAL_API_TOKEN: INTERNAL_TOKEN,
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_TASK_QUEUE: 'ingestion-test',
    };
    // No fail-fast window, so a test can bring the server back and retry at once.
    gateway = new RecordingGateway(
      createTemporalGateway(loadConfig(env), logger, { callTimeoutMs: 1500, failFastMs: 0 }),
    );
    api = await serve(db, env, gateway);
  });
  afterEach(async () => {
    await api.close();
    await gateway.close();
    await connection.close();
    server.process.kill('SIGCONT');
    await server.stop();
  });

  it('answers 202 with the webhook id, workflow id, run id and status URL, and starts one workflow', async () => {
    const response = await post(api, candidateNew);
    assert.equal(response.status, 202);
    const ids = webhookIds(candidateNew as never);
    const statusUrl = `${api.url}/internal/v1/webhooks/${ids.webhookId}`;
    assert.deepEqual(await response.json(), {
      webhook_id: ids.webhookId,
      event_id: 'candidate-new-acme-c-77',
      workflow_id: 'webhook-candidate-new-candidate-new-acme-c-77',
      run_id: await runIdOf('webhook-candidate-new-candidate-new-acme-c-77'),
      status_url: statusUrl,
    });
    assert.equal(response.headers.get('location'), statusUrl);
    assert.equal(gateway.starts.length, 1);
    const { event_id: _id, ...envelope } = candidateNew;
    const input = await startedInput('webhook-candidate-new-candidate-new-acme-c-77');
    assert.deepEqual(input, {
      webhookId: ids.webhookId,
      eventId: 'candidate-new-acme-c-77',
      event: envelope,
      sendTimeoutMs: 30_000,
      orderingKey: 'candidate:c-77',
    });
    assert.ok(!JSON.stringify(input).includes(PARTNER_TOKEN), 'the partner token is never workflow input');
    const row = await db.knex('webhook_events').where({ id: ids.webhookId }).first();
    assert.deepEqual(
      [row.event_id, row.event_type, row.action, row.company_id, row.workflow_id, row.run_id, row.status, row.is_test],
      [
        'candidate-new-acme-c-77',
        'candidate',
        'new',
        'acme',
        'webhook-candidate-new-candidate-new-acme-c-77',
        await runIdOf(ids.workflowId),
        'pending',
        false,
      ],
    );
    const { rows } = await db.knex.raw('SELECT body::text AS text FROM webhook_events WHERE id = ?', [ids.webhookId]);
    assert.equal(rows[0].text, JSON.stringify(envelope), 'the row keeps the exact body every attempt sends');
  });

  it('generates an event_id when none is given', async () => {
    const { event_id: _omit, ...withoutId } = jobNew;
    const response = await post(api, withoutId);
    assert.equal(response.status, 202);
    const body = (await response.json()) as Record<string, string>;
    assert.match(body.event_id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(body.workflow_id, `webhook-job-new-${body.event_id}`);
    assert.equal(body.webhook_id, webhookIds({ ...withoutId, event_id: body.event_id } as never).webhookId);
  });

  it('answers 200 with the existing webhook for a repeated event_id and never starts a second delivery', async () => {
    const first = await post(api, candidateNew);
    assert.equal(first.status, 202);
    const firstBody = await first.json();
    const changed = {
      ...candidateNew,
      data: { ...candidateNew.data, candidate: { ...candidateNew.data.candidate, first_name: 'Changed' } },
    };
    const again = await post(api, changed);
    assert.equal(again.status, 200);
    assert.deepEqual(await again.json(), firstBody);
    assert.equal(gateway.starts.length, 1);
    assert.equal(await rowCount(), 1);
    const row = await db.knex('webhook_events').first();
    assert.equal(row.body.data.candidate.first_name, 'Ada', 'the first submission is the one delivered');
  });

  it('accepts concurrent duplicates once: one 202, the rest 200 with the same run', async () => {
    const responses = await Promise.all(Array.from({ length: 6 }, () => post(api, jobNew)));
    const statuses = responses.map((r) => r.status).sort();
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 202]);
    const bodies = await Promise.all(responses.map((r) => r.json() as Promise<Record<string, string>>));
    assert.equal(new Set(bodies.map((b) => b.run_id)).size, 1);
    assert.equal(await rowCount(), 1);
    assert.equal(new Set(gateway.starts.map((s) => s.workflowId)).size, 1);
  });

  it('answers 409 with Retry-After, not 503, when every claim of the event finds its row taken from under it, and starts nothing', async () => {
    // A row holding the event's workflow id under another event id: each claim's insert conflicts, and its read
    // by event_id finds nothing, as when concurrent starts keep taking the row back.
    const { workflowId } = webhookIds(jobNew as never);
    await db.knex('webhook_events').insert({
      id: '6f1d3c1e-9a7b-4c2d-8e5f-0a1b2c3d4e5f',
      event_id: 'another-event',
      event_type: 'job',
      action: 'new',
      body: {},
      workflow_id: workflowId,
    });
    const response = await post(api, jobNew);
    assert.equal(response.status, 409);
    assert.equal(response.headers.get('retry-after'), '1');
    assert.deepEqual(await response.json(), {
      detail: `Concurrent requests with event_id ${jobNew.event_id} are starting its delivery; retry with the same event_id.`,
    });
    assert.equal(gateway.starts.length, 0);
    assert.equal(await rowCount(), 1);
  });

  it('says a webhook whose start never completed has not started; the retry that starts it answers 202 with the stored event', async () => {
    const ids = webhookIds(jobNew as never);
    const { event_id: _id, ...envelope } = jobNew;
    await insertWebhook(db.knex, IN_CLEAR, { ...ids, event: envelope as never, runId: null, isTest: false });
    const statusUrl = `${api.url}/internal/v1/webhooks/${ids.webhookId}`;
    const before = (await (await get(statusUrl)).json()) as Record<string, unknown>;
    assert.deepEqual(
      [before.status, before.run_id, before.live],
      ['not_started', null, { source: 'database', reason: 'Temporal has no run of this webhook' }],
    );
    const response = await post(api, {
      ...jobNew,
      data: { ...jobNew.data, job: { ...jobNew.data.job, title: 'Other' } },
    });
    assert.equal(response.status, 202, 'this call started the delivery');
    assert.equal(gateway.starts.length, 1);
    assert.equal(
      ((await startedInput(ids.workflowId)).event.data as typeof jobNew.data).job.title,
      'Senior Backend Engineer',
    );
    assert.equal(
      (await db.knex('webhook_events').where({ id: ids.webhookId }).first()).run_id,
      await runIdOf(ids.workflowId),
    );
    const after = (await (await get(statusUrl)).json()) as Record<string, unknown>;
    assert.deepEqual([after.status, after.run_id], ['pending', await runIdOf(ids.workflowId)]);
    assert.equal((await post(api, jobNew)).status, 200, 'a later duplicate finds the run');
  });

  it('sends byte-identical bodies on every attempt, whether the first call or a retry of a failed start delivered it', async () => {
    // Keys that jsonb would re-order (longer after shorter, integer-like first) and a nested object.
    const text =
      '{"event_type":"job","action":"update","event_id":"order-1","data":{"zeta":1,"b":{"y":2,"x":[3,"é"]},"10":4,"aa":null}}';
    const expected =
      '{"event_type":"job","action":"update","data":{"10":4,"zeta":1,"b":{"y":2,"x":[3,"é"]},"aa":null}}';
    const event = JSON.parse(text);
    const partner = await startPartnerServer(answer(500));
    const native = await NativeConnection.connect({ address: server.address });
    const config = loadConfig({ ...env, PARTNER_ENDPOINT: partner.url, PARTNER_ACCESS_TOKEN: PARTNER_TOKEN });
    const worker = await startTestWorker({ config, knex: db.knex, logger }, native, {
      interceptorModules: [COMPRESS_TIMERS],
    });
    try {
      // First path: the API call starts it. The partner fails the first attempt, so a second one follows.
      assert.equal((await post(api, text)).status, 202);
      await eventually('two attempts', async () => partner.requests.length === 2, 20_000);
      // Retry path: a row whose start never completed, started by a later call with the event re-read from PostgreSQL.
      partner.handler = answer(204);
      const retried = { ...event, event_id: 'order-2' };
      const ids = webhookIds(retried);
      await insertWebhook(db.knex, IN_CLEAR, { ...ids, event: toEnvelope(retried), runId: null, isTest: false });
      assert.equal((await post(api, { ...retried, data: { other: true } })).status, 202);
      await eventually('the third POST', async () => partner.requests.length === 3, 20_000);
      assert.deepEqual(
        partner.requests.map((r) => r.body),
        [expected, expected, expected],
      );
      const { rows } = await db.knex.raw('SELECT body::text AS text FROM webhook_events ORDER BY event_id');
      assert.deepEqual(
        rows.map((r: { text: string }) => r.text),
        [expected, expected],
      );
    } finally {
      await worker.stop();
      await native.close();
      await partner.close();
    }
  });

  it('answers 400 with every path-level error and writes nothing', async () => {
    const bad = {
      event_type: 'candidate',
      action: 'new',
      data: {
        ...candidateNew.data,
        candidate: {
          ...candidateNew.data.candidate,
          status: { id: 2, name: 'x', group: 7 },
          source_type: 'walk-in',
          files: { ...candidateNew.data.candidate.files, cv: 'not a url' },
        },
        job: { ...candidateNew.data.job, from_date: '2025-02-30', language: 'eng' },
      },
    };
    const response = await post(api, bad);
    assert.equal(response.status, 400);
    assert.deepEqual(await response.json(), {
      detail: 'Invalid webhook event.',
      errors: [
        { path: 'data.candidate.status.group', message: 'must be one of 0, 1, 19, 20, 21' },
        { path: 'data.candidate.files.cv', message: 'must be an http:// or https:// URL' },
        {
          path: 'data.candidate.source_type',
          message:
            'must be one of applied, applied-silent, copied, imported, recommended, sourced, uploaded, uploaded-extension',
        },
        { path: 'data.job.from_date', message: 'must be a date shaped YYYY-MM-DD' },
        { path: 'data.job.language', message: 'must be a two-letter (alpha-2) code' },
      ],
    });
    assert.equal(await rowCount(), 0);
    assert.equal(gateway.starts.length, 0);
  });

  it('answers 400 for an unknown event type, a missing action, a non-object data and an unknown field', async () => {
    const response = await post(api, { event_type: 'invoice', data: [], extra: true, event_id: 'bad id' });
    assert.equal(response.status, 400);
    assert.deepEqual(await response.json(), {
      detail: 'Invalid webhook event.',
      errors: [
        {
          path: 'event_id',
          message: "must be 1 to 128 letters, digits, '.', '_', ':' or '-', starting with a letter or digit",
        },
        { path: 'event_type', message: 'must be one of company, job, candidate' },
        { path: 'action', message: 'required' },
        { path: 'data', message: 'must be a JSON object' },
        { path: 'extra', message: 'unknown field' },
      ],
    });
  });

  it('answers 400, never 500, for text PostgreSQL cannot store (NUL characters, lone surrogates)', async () => {
    const response = await post(
      api,
      '{"event_type":"job","action":"update","data":{"title":"a\\u0000b","tags":["\\ud800"],"k\\u0000":1}}',
    );
    assert.equal(response.status, 400);
    const message = 'text PostgreSQL cannot store: a NUL character (\\u0000) or an unpaired surrogate';
    assert.deepEqual(await response.json(), {
      detail: 'Invalid webhook event.',
      errors: [
        { path: 'data.title', message },
        { path: 'data.tags[0]', message },
        { path: 'data.k\u0000', message },
      ],
    });
    assert.equal(await rowCount(), 0);
    assert.equal(gateway.starts.length, 0);
  });

  it('answers 400, never 500, for a company id longer than 255 characters, whatever the event', async () => {
    for (const event of [
      { event_type: 'job', action: 'update', data: { company_id: 'c'.repeat(3000) } },
      { event_type: 'candidate', action: 'update', data: { company: { id: 'c'.repeat(256) } } },
    ]) {
      const response = await post(api, event);
      assert.equal(response.status, 400);
      const path = 'company_id' in event.data ? 'data.company_id' : 'data.company.id';
      assert.deepEqual(await response.json(), {
        detail: 'Invalid webhook event.',
        errors: [{ path, message: 'must be at most 255 characters' }],
      });
    }
    assert.equal(await rowCount(), 0);
  });

  it('answers 400, never 500, for data nested deeper than 64 levels', async () => {
    const depth = 50_000;
    const response = await post(
      api,
      `{"event_type":"job","action":"update","data":{"a":${'['.repeat(depth)}${']'.repeat(depth)}}}`,
    );
    assert.equal(response.status, 400);
    const body = (await response.json()) as { errors: Array<{ path: string; message: string }> };
    assert.deepEqual(
      body.errors.map((e) => e.message),
      ['nested deeper than 64 levels'],
    );
    assert.equal(body.errors[0].path, `data.a${'[0]'.repeat(62)}`, 'the path is 64 segments long');
    assert.equal(await rowCount(), 0);
  });

  it('accepts any JSON object as data for type/action pairs the spec does not show', async () => {
    const response = await post(api, { event_type: 'job', action: 'dynamic_update', data: { anything: [1, 2] } });
    assert.equal(response.status, 202);
  });

  it('answers 400 for malformed JSON and a JSON array, 415 for another media type, 413 for over 1 MB', async () => {
    const malformed = await post(api, '{"event_type": ');
    assert.equal(malformed.status, 400);
    assert.match(((await malformed.json()) as { detail: string }).detail, /^JSON parse error/);
    const array = await post(api, '[]');
    assert.equal(array.status, 400);
    assert.deepEqual(await array.json(), {
      detail: 'Invalid webhook event.',
      errors: [{ path: '(root)', message: 'Invalid input: expected object, received array' }],
    });
    const text = await post(api, 'hello', { 'content-type': 'text/plain' });
    assert.equal(text.status, 415);
    const huge = await post(api, { ...jobNew, data: { ...jobNew.data, padding: 'x'.repeat(1_100_000) } });
    assert.equal(huge.status, 413);
    assert.deepEqual(await huge.json(), { detail: 'Request body is larger than 1mb.' });
    // A `__proto__` key anywhere is prototype poisoning for a receiver that merges objects: refused, as documented.
    const poisoned = await post(
      api,
      JSON.stringify(jobNew).replace('"settings":{', '"settings":{"__proto__":{"isAdmin":true},'),
    );
    assert.deepEqual(
      [poisoned.status, await poisoned.json()],
      [400, { detail: 'JSON parse error - Object contains forbidden prototype property' }],
    );
    assert.equal(await rowCount(), 0);
  });

  it('answers 401 without a bearer token or with a wrong one', async () => {
    const missing = await post(api, candidateNew, { authorization: '' });
    assert.equal(missing.status, 401);
    assert.equal(missing.headers.get('www-authenticate'), 'Bearer realm="internal"');
    assert.deepEqual(await missing.json(), { detail: 'Authentication credentials were not provided.' });
    const wrong = await post(api, candidateNew, { authorization: 'Bearer internal-token-0123456789abcdeX' });
    assert.equal(wrong.status, 401);
    assert.deepEqual(await wrong.json(), { detail: 'Invalid token.' });
    const statusUrl = `${api.url}/internal/v1/webhooks/${webhookIds(candidateNew as never).webhookId}`;
    assert.equal((await get(statusUrl, 'nope-nope-nope-nope')).status, 401);
    assert.equal(await rowCount(), 0);
  });

  it('serves the status URL: the row, its recorded attempts and the live delivery state', async () => {
    const partner = await startPartnerServer(answer(500, 'oops'));
    const native = await NativeConnection.connect({ address: server.address });
    const config = loadConfig({ ...env, PARTNER_ENDPOINT: partner.url, PARTNER_ACCESS_TOKEN: PARTNER_TOKEN });
    const worker = await startTestWorker({ config, knex: db.knex, logger }, native);
    try {
      const accepted = (await (await post(api, candidateNew)).json()) as Record<string, string>;
      const handle = client.workflow.getHandle(accepted.workflow_id);
      await eventually('the waiting state', async () => (await handle.query(webhookStatusQuery)).state === 'waiting');
      await eventually(
        'the first record',
        async () => (await db.knex('webhook_attempts').where({ webhook_id: accepted.webhook_id })).length === 1,
      );
      const live = await handle.query(webhookStatusQuery);
      const response = await get(accepted.status_url);
      assert.equal(response.status, 200);
      const view = (await response.json()) as Record<string, any>;
      const { event_id: _eventId, ...event } = candidateNew;
      assert.deepEqual(
        {
          ...view,
          accepted_at: undefined,
          created_at: undefined,
          updated_at: undefined,
          attempts: undefined,
          signed_links: undefined,
        },
        {
          webhook_id: accepted.webhook_id,
          event_id: 'candidate-new-acme-c-77',
          event_type: 'candidate',
          action: 'new',
          company_id: 'acme',
          workflow_id: accepted.workflow_id,
          run_id: accepted.run_id,
          status: 'pending',
          redelivery_of: null,
          is_test: false,
          finished_at: null,
          held_since: null,
          status_reason: null,
          payload_removed_at: null,
          payload_removed_reason: null,
          accepted_at: undefined,
          created_at: undefined,
          updated_at: undefined,
          attempts: undefined,
          signed_links: undefined,
          event,
          live: { source: 'temporal', state: 'waiting', next_attempt_at: live.nextAttemptAt },
        },
      );
      // The candidate's files expire 24 h after acceptance, its file answer 2 h after (spec section 8).
      const acceptedAt = Date.parse(view.accepted_at);
      assert.equal(view.accepted_at, view.created_at);
      assert.deepEqual(view.signed_links, [
        { kind: 'files', expires_at: new Date(acceptedAt + 24 * 3600_000).toISOString(), expired: false },
        { kind: 'file_answers', expires_at: new Date(acceptedAt + 2 * 3600_000).toISOString(), expired: false },
      ]);
      const [attempt] = live.attempts;
      assert.deepEqual(
        view.attempts.map((a: any) => ({ ...a, recorded_at: undefined })),
        [
          {
            attempt: 1,
            trigger: 'schedule',
            scheduled_at: attempt.scheduledAt,
            started_at: attempt.startedAt,
            duration_ms: attempt.durationMs,
            http_status: 500,
            error_class: null,
            error_message: null,
            response_body: 'oops',
            succeeded: false,
            expired_links: [],
            recorded_at: undefined,
          },
        ],
      );
      assert.equal((await get(`${api.url}/internal/v1/webhooks/00000000-0000-4000-8000-000000000000`)).status, 404);
      assert.equal((await get(`${api.url}/internal/v1/webhooks/not-a-uuid`)).status, 404);
    } finally {
      await worker.stop();
      await native.close();
      await partner.close();
    }
  });

  it('answers 503 with a clear body and keeps no row while Temporal is down; the retry after it is back is accepted', async () => {
    await server.stop();
    const response = await post(api, candidateNew);
    assert.equal(response.status, 503);
    assert.equal(response.headers.get('retry-after'), '30');
    const body = (await response.json()) as { detail: string; reason: string };
    assert.equal(body.reason, 'temporal_unreachable');
    assert.match(
      body.detail,
      new RegExp(
        `^Temporal is unreachable \\(cannot connect to ${server.address.replace(/\./g, '\\.')} .*\\): nothing was stored\\. Retry later with the same event_id\\.$`,
      ),
    );
    assert.equal(await rowCount(), 0);
    server = await startTestDevServer({ port: Number(server.address.split(':')[1]) });
    assert.equal((await post(api, candidateNew)).status, 202, 'the retry with the same event_id is accepted');
  });

  it('answers only 503s, never a 500, to concurrent duplicates while Temporal is down', async () => {
    await server.stop();
    for (let round = 0; round < 3; round++) {
      const responses = await Promise.all(Array.from({ length: 20 }, () => post(api, candidateNew)));
      assert.deepEqual([...new Set(responses.map((r) => r.status))], [503]);
    }
    assert.equal(await rowCount(), 0);
  });

  it('keeps the row when Temporal was reached but did not answer (server paused), shows it as not started; the retry finds the one workflow', async () => {
    assert.deepEqual(await gateway.status('warm-up-the-connection'), { kind: 'absent' });
    server.process.kill('SIGSTOP');
    const response = await post(api, candidateNew);
    assert.equal(response.status, 503);
    assert.equal(response.headers.get('retry-after'), '5');
    const body = (await response.json()) as { detail: string; reason: string };
    assert.equal(body.reason, 'outcome_unknown');
    assert.match(
      body.detail,
      /^Temporal did not answer in time \(the workflow could not be started \(.+\)\): the webhook may or may not have been accepted\. Retry with the same event_id to learn which; it is never delivered twice\.$/,
    );
    assert.equal(await rowCount(), 1, 'the workflow may exist, so its record stays');
    const { workflowId, webhookId } = webhookIds(candidateNew as never);
    const view = (await (await get(`${api.url}/internal/v1/webhooks/${webhookId}`)).json()) as Record<string, unknown>;
    assert.deepEqual(
      [view.status, view.run_id],
      ['not_started', null],
      'no run is known, so it does not look accepted',
    );
    server.process.kill('SIGCONT');
    // A server frozen for seconds may time out its first calls after it resumes (seen beside CI's other lanes):
    // the retry is made once it answers again, as a client honouring Retry-After would make it.
    await eventually(
      'Temporal to answer again',
      async () =>
        gateway.status('warm-up-the-connection').then(
          () => true,
          () => false,
        ),
      30_000,
    );
    const retry = await post(api, candidateNew);
    assert.equal(retry.status, 202, 'the call that records the run is the one that started the delivery');
    assert.equal(((await retry.json()) as Record<string, string>).run_id, await runIdOf(workflowId));
    assert.equal(await rowCount(), 1);
    await eventually(
      'visibility of the workflow',
      async () => (await client.workflow.count(`WorkflowId = '${workflowId}'`)).count > 0,
    );
    assert.equal((await client.workflow.count(`WorkflowId = '${workflowId}'`)).count, 1);
  });
});

describe('POST /internal/v1/webhooks with Temporal unreachable (TEMPORAL_ADDRESS at a closed port)', function () {
  this.timeout(20_000);
  const db = useTestDatabase();
  /** The API with its gateway pointed at a closed port. */
  const unreachableApi = async () => {
    const port = await closedPort();
    const settings = { INTERNAL_API_TOKEN: INTERNAL_TOKEN, TEMPORAL_ADDRESS: `127.0.0.1:${port}` };
    const gateway = createTemporalGateway(loadConfig(settings), logger, { connectTimeoutMs: 1000 });
    return { port, gateway, api: await serve(db, settings, gateway) };
  };

  it('answers 503 quickly, twice, and accepts nothing', async () => {
    const { port, gateway, api } = await unreachableApi();
    try {
      for (let i = 0; i < 2; i++) {
        const response = await post(api, candidateNew);
        assert.equal(response.status, 503);
        const body = (await response.json()) as { detail: string; reason: string };
        assert.equal(body.reason, 'temporal_unreachable');
        assert.match(
          body.detail,
          new RegExp(
            `^Temporal is unreachable \\(cannot connect to 127\\.0\\.0\\.1:${port} .*\\): nothing was stored\\. Retry later with the same event_id\\.$`,
          ),
        );
      }
      assert.equal(Number((await db.knex('webhook_events').count({ n: '*' }))[0].n), 0);
      // The rest of the API keeps serving.
      assert.equal((await fetch(`${api.url}/healthz`)).status, 200);
    } finally {
      await api.close();
      await gateway.close();
    }
  });

  it('an erasure request answers 503 and keeps no record: nothing was started, so the same request may be sent again', async () => {
    const { gateway, api } = await unreachableApi();
    try {
      const response = await fetch(`${api.url}/internal/v1/erasures`, {
        method: 'POST',
        headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'someone@example.com' }),
      });
      assert.equal(response.status, 503);
      assert.equal(response.headers.get('retry-after'), '30');
      const body = (await response.json()) as { detail: string; reason: string };
      assert.match(
        body.detail,
        /^The erasure was not started, since Temporal is unavailable \(cannot connect to 127\.0\.0\.1:\d+ .*\): nothing was recorded or erased\. Send the request again later\.$/,
      );
      assert.deepEqual(Object.keys(body).sort(), ['detail', 'reason']);
      assert.equal(Number((await db.knex('erasures').count({ n: '*' }))[0].n), 0);
    } finally {
      await api.close();
      await gateway.close();
    }
  });
});

describe('internal routes without INTERNAL_API_TOKEN', () => {
  const db = useTestDatabase();

  it('exist for named tokens, and refuse any other token: 401 for POST and GET, nothing started', async () => {
    const unreachable = loadConfig({ TEMPORAL_ADDRESS: `127.0.0.1:${await closedPort()}` });
    const gateway = new RecordingGateway(createTemporalGateway(unreachable, logger));
    const api = await serve(db, {}, gateway);
    try {
      const response = await post(api, candidateNew);
      assert.equal(response.status, 401);
      assert.equal(response.headers.get('www-authenticate'), 'Bearer realm="internal", error="invalid_token"');
      assert.deepEqual(await response.json(), { detail: 'Invalid token.' });
      const status = await get(`${api.url}/internal/v1/webhooks/00000000-0000-4000-8000-000000000000`);
      assert.equal(status.status, 401);
      assert.equal(status.headers.get('www-authenticate'), 'Bearer realm="internal", error="invalid_token"');
      assert.equal(gateway.starts.length, 0);
    } finally {
      await api.close();
    }
  });
});
