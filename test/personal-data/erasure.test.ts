// Erasure on request on a real dev server: POST /internal/v1/erasures and its status, the eraseSubject workflow
// (index, the erasing transaction, runs deleted and waited for until gone), a second request, idempotent steps
// resumed by the workflow, and the answers to bad requests. A loopback partner answers by webhook-id header.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { createErasureActivities } from '../../activities/personal-data/erasure';
import { DEVELOPMENT_SUBJECT_INDEX_KEY } from '../../lib/at-rest';
import { prepareWebhook } from '../../application/ingestion/start-webhook';
import { subjectKey } from '../../lib/subject-index';
import { createTemporalGateway } from '../../temporal/gateway';
import { createLogger } from '../../lib/logger';
import { insertErasure } from '../../store/personal-data/erasures';
import { erasureWorkflowId } from '../../workflows/types';
import candidateNew from '../fixtures/events/candidate-new.json';
import { startWebhookStack, type WebhookStack } from '../support/webhook-stack';
import { eventually } from '../support/eventually';
import { startTestWorker, testWorkflowBundle } from '../support/temporal';
import { documentedAnswers, type Doc } from '../support/openapi';
import { INTERNAL_TOKEN } from '../support/tokens';

const PHONE_MESSAGE =
  'must be a phone number: digits with its country code (+44 20 7946 0000), spaces and + - . ( ) / allowed';

describe('erasure on request on the Temporal dev server', function () {
  this.timeout(180_000);
  let stack: WebhookStack;
  /** Partner answers by webhook-id; unknown ids get 200 with a body that names the candidate. */
  const answers = new Map<string, number>();

  before(async () => {
    stack = await startWebhookStack({
      env: { INTERNAL_API_TOKEN: INTERNAL_TOKEN, PARTNER_MAX_PER_SECOND: '1000' },
      partnerHandler: (req, res, body) => {
        const email = (JSON.parse(body) as { data: { candidate?: { email?: string } } }).data.candidate?.email ?? '';
        res.writeHead(answers.get(String(req.headers['webhook-id'])) ?? 200).end(`received for ${email}`);
      },
    });
  });
  after(() => stack?.close());

  const call = async (method: 'GET' | 'POST', path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const response = await fetch(`${stack.api.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${INTERNAL_TOKEN}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    return {
      status: response.status,
      location: response.headers.get('location'),
      body: (await response.json()) as Record<string, any>,
    };
  };
  const erase = (body: unknown) => call('POST', '/internal/v1/erasures', body);
  const candidateEvent = (candidateId: string, email: string) => {
    const event = structuredClone(candidateNew);
    event.event_id = `erasure-${randomUUID()}`;
    event.data.candidate.id = candidateId;
    event.data.candidate.email = email;
    return event;
  };
  const requestsFor = (webhookId: string) =>
    stack.partner.requests.filter((r) => r.headers['webhook-id'] === webhookId);
  const accept = async (event: object) => {
    const accepted = await call('POST', '/internal/v1/webhooks', event);
    assert.equal(accepted.status, 202);
    return accepted.body as { webhook_id: string; workflow_id: string };
  };
  const delivered = async (event: object) => {
    const accepted = await accept(event);
    await stack.client.workflow.getHandle(accepted.workflow_id).result();
    return accepted;
  };
  const waiting = async (event: object) => {
    answers.set(prepareWebhook(event).webhookId, 500);
    const accepted = await accept(event);
    await eventually(
      'the first attempt recorded',
      async () => (await stack.db.knex('webhook_attempts').where({ webhook_id: accepted.webhook_id })).length === 1,
    );
    return accepted;
  };
  const completed = async (erasureId: string, timeoutMs = 120_000) => {
    let view: Record<string, any> = {};
    await eventually(
      `erasure ${erasureId} completed`,
      async () => {
        view = (await call('GET', `/internal/v1/erasures/${erasureId}`)).body;
        return view.status === 'completed';
      },
      timeoutMs,
    );
    return view;
  };
  const rowsOf = (ids: string[]) =>
    stack.db
      .knex('webhook_events')
      .whereIn('id', ids)
      .orderBy('id')
      .select(
        'id',
        'status',
        'status_reason',
        'body',
        'body_sealed',
        'payload_removed_reason',
        'subject_keys',
        'held_since',
        stack.db.knex.raw('finished_at IS NOT NULL AS finished'),
      );
  const excerptsOf = async (ids: string[]) =>
    (
      await stack.db.knex('webhook_attempts').whereIn('webhook_id', ids).select('response_body', 'response_body_sealed')
    ).map((a) => [a.response_body, a.response_body_sealed]);
  const knownToTemporal = async (workflowId: string) =>
    stack.client.workflow
      .getHandle(workflowId)
      .describe()
      .then(
        () => true,
        (error: unknown) => {
          if (error instanceof WorkflowNotFoundError) return false;
          throw error;
        },
      );

  it("erases a candidate's webhooks: bodies and excerpts gone, the pending one cancelled and never POSTed again, every run gone; again changes nothing", async () => {
    const candidateId = `c-${randomUUID()}`;
    const email = `erase-${randomUUID()}@example.org`;
    const done = await delivered(candidateEvent(candidateId, email));
    const original = await delivered(candidateEvent(candidateId, email));
    const redelivery = (await call('POST', `/internal/v1/webhooks/${original.webhook_id}/redeliver`)).body as {
      webhook_id: string;
      workflow_id: string;
    };
    await stack.client.workflow.getHandle(redelivery.workflow_id).result();
    // Last: ordered by candidate (the default), a webhook accepted after the waiting one would queue behind it.
    const pending = await waiting(candidateEvent(candidateId, email));
    const other = await delivered(candidateEvent(`c-${randomUUID()}`, `other-${randomUUID()}@example.org`));
    const erased = [pending, done, original, redelivery];
    const ids = erased.map((w) => w.webhook_id);
    // One row as written before the subject index existed: the erasure indexes it first.
    await stack.db.knex('webhook_events').where({ id: done.webhook_id }).update({ subject_keys: null });
    assert.deepEqual(
      (await excerptsOf(ids)).map(([clear]) => clear),
      [...ids.map(() => `received for ${email}`)],
      'every excerpt names the candidate before',
    );

    const response = await erase({ candidate_id: candidateId });
    assert.equal(response.status, 202);
    const erasureId = response.body.erasure_id as string;
    const statusUrl = `${stack.api.url}/internal/v1/erasures/${erasureId}`;
    assert.deepEqual(response.body, { erasure_id: erasureId, status: 'pending', status_url: statusUrl });
    assert.equal(response.location, statusUrl);

    const view = await completed(erasureId);
    assert.deepEqual(
      {
        ...view,
        requested_at: typeof view.requested_at,
        completed_at: typeof view.completed_at,
        updated_at: typeof view.updated_at,
      },
      {
        erasure_id: erasureId,
        status: 'completed',
        subject_kind: 'candidate_id',
        company_id: null,
        requested_by: 'INTERNAL_API_TOKEN',
        requested_at: 'string',
        webhooks_found: 4,
        deliveries_cancelled: 1,
        bodies_removed: 4,
        runs_deleted: 4,
        runs_gone: 4,
        pending_reason: null,
        index_key_ids: ['development'],
        completed_at: 'string',
        updated_at: 'string',
        status_url: statusUrl,
      },
    );

    const rows = new Map((await rowsOf(ids)).map((row) => [row.id, row]));
    for (const { webhook_id: id } of erased) {
      const row = rows.get(id)!;
      assert.deepEqual(
        [row.body, row.body_sealed, row.payload_removed_reason, row.subject_keys, row.held_since, row.finished],
        [null, null, 'erasure', [], null, true],
        id,
      );
    }
    assert.deepEqual(
      [rows.get(pending.webhook_id)!.status, rows.get(pending.webhook_id)!.status_reason],
      ['cancelled', 'erasure'],
    );
    for (const { webhook_id: id } of [done, original, redelivery])
      assert.deepEqual([rows.get(id)!.status, rows.get(id)!.status_reason], ['delivered', null]);
    assert.deepEqual(
      await excerptsOf(ids),
      ids.map(() => [null, null]),
    );
    for (const { workflow_id: workflowId } of erased)
      assert.equal(await knownToTemporal(workflowId), false, workflowId);
    // The record keeps the subject's HMAC only.
    const record = await stack.db.knex('erasures').where({ id: erasureId }).first();
    assert.deepEqual(
      [record.subject_keys, record.subject_key_ids],
      [[subjectKey(DEVELOPMENT_SUBJECT_INDEX_KEY, 'candidate_id', candidateId)], ['development']],
    );
    assert.equal(JSON.stringify(record).includes(candidateId), false);
    // The pending delivery's attempt 2 was due 10 s after attempt 1, long before the runs were gone.
    assert.equal(requestsFor(pending.webhook_id).length, 1);

    // Another candidate's webhook is untouched.
    const [untouched] = await rowsOf([other.webhook_id]);
    assert.equal(untouched.status, 'delivered');
    assert.notEqual(untouched.body, null);
    assert.equal(untouched.subject_keys.length, 4, 'the candidate id, the phone number and the two addresses');
    assert.equal(await knownToTemporal(other.workflow_id), true);

    // The erasure's own history replays with today's workflow code: deterministic, its timers included.
    const handle = stack.client.workflow.getHandle(erasureWorkflowId(erasureId));
    assert.deepEqual(await handle.result(), {
      erasureId,
      webhooksFound: 4,
      deliveriesCancelled: 1,
      bodiesRemoved: 4,
      runsDeleted: 4,
    });
    await Worker.runReplayHistory(
      { workflowBundle: { code: await testWorkflowBundle() } },
      await handle.fetchHistory(),
      erasureWorkflowId(erasureId),
    );

    // The same request again finds nothing and completes at once.
    const before = await rowsOf(ids);
    const again = await erase({ candidate_id: ` ${candidateId} ` });
    assert.equal(again.status, 202);
    const second = await completed(again.body.erasure_id, 10_000);
    assert.deepEqual(
      [
        second.webhooks_found,
        second.deliveries_cancelled,
        second.bodies_removed,
        second.runs_deleted,
        second.runs_gone,
      ],
      [0, 0, 0, 0, 0],
    );
    assert.deepEqual(await rowsOf(ids), before);
  });

  it('erases by e-mail address without case, only within the company given', async () => {
    const email = `Mixed-${randomUUID()}@Example.org`;
    const inAcme = await delivered(candidateEvent(`c-${randomUUID()}`, email));
    const otherCompanyEvent = candidateEvent(`c-${randomUUID()}`, email);
    otherCompanyEvent.data.company.id = `other-${randomUUID()}`;
    const inOther = await delivered(otherCompanyEvent);
    const response = await erase({ email: email.toLowerCase(), company_id: 'acme' });
    assert.equal(response.status, 202);
    const view = await completed(response.body.erasure_id);
    assert.deepEqual(
      [
        view.subject_kind,
        view.company_id,
        view.webhooks_found,
        view.deliveries_cancelled,
        view.bodies_removed,
        view.runs_gone,
      ],
      ['email', 'acme', 1, 0, 1, 1],
    );
    const [erasedRow, keptRow] = [(await rowsOf([inAcme.webhook_id]))[0], (await rowsOf([inOther.webhook_id]))[0]];
    assert.deepEqual([erasedRow.body, erasedRow.payload_removed_reason], [null, 'erasure']);
    assert.deepEqual([keptRow.body === null, keptRow.payload_removed_reason], [false, null]);
    assert.equal(await knownToTemporal(inOther.workflow_id), true);
  });

  it('each step run twice changes nothing the second time, and a workflow started after the erasing step completes from the record', async () => {
    const candidateId = `c-${randomUUID()}`;
    const pending = await waiting(candidateEvent(candidateId, `resume-${randomUUID()}@example.org`));
    const erasureId = randomUUID();
    await insertErasure(stack.db.knex, {
      id: erasureId,
      subjectKind: 'candidate_id',
      subjectKeys: [subjectKey(DEVELOPMENT_SUBJECT_INDEX_KEY, 'candidate_id', candidateId)!],
      keyIds: ['development'],
      companyId: null,
      requestedBy: 'test',
    });
    const steps = createErasureActivities({
      config: () => stack.config,
      knex: stack.db.knex,
      workflowService: stack.native.workflowService,
    });
    // Index, then erase: twice each, as a retry after a lost reply would.
    assert.equal(await steps.indexUnindexedWebhooks(null), null);
    assert.equal(await steps.indexUnindexedWebhooks(null), null);
    const counts = { webhooksFound: 1, deliveriesCancelled: 1, bodiesRemoved: 1 };
    assert.deepEqual(await steps.eraseSubjectWebhooks(erasureId), counts);
    const afterFirst = await rowsOf([pending.webhook_id]);
    assert.deepEqual(await steps.eraseSubjectWebhooks(erasureId), counts);
    assert.deepEqual(await rowsOf([pending.webhook_id]), afterFirst);
    // The claim of the next attempt is refused while the run lives: the attempt is lost unsent (see the claim's tests).
    // The worker "crashed" here: the workflow started for the same record resumes from it.
    await stack.gateway.startErasure(erasureId);
    const view = await completed(erasureId);
    assert.deepEqual(
      [view.webhooks_found, view.deliveries_cancelled, view.bodies_removed, view.runs_deleted, view.runs_gone],
      [1, 1, 1, 1, 1],
    );
    assert.equal(await knownToTemporal(pending.workflow_id), false);
    // A sweep again finds nothing left: every workflow id is gone.
    assert.deepEqual(await steps.sweepErasureRuns(erasureId), { left: 0, unsettled: 0, runsDeleted: 1 });
    // The erasure's own run is kept, completed, with its summary.
    const summary = await stack.client.workflow.getHandle(erasureWorkflowId(erasureId)).result();
    assert.deepEqual(summary, { erasureId, ...counts, runsDeleted: 1 });
    assert.equal(requestsFor(pending.webhook_id).length, 1);
  });

  it('resumes after its worker stops between steps: a new worker on the queue finishes it from the history', async () => {
    const candidateId = `c-${randomUUID()}`;
    const webhooks = [
      await delivered(candidateEvent(candidateId, `stop-${randomUUID()}@example.org`)),
      await waiting(candidateEvent(candidateId, `stop-${randomUUID()}@example.org`)),
    ];
    // The erasure runs on a queue of its own, whose worker this test stops and starts again.
    const config = { ...stack.config, TEMPORAL_TASK_QUEUE: `erasure-stop-${randomUUID()}` };
    const logger = createLogger('silent');
    const gateway = createTemporalGateway(config, logger);
    let worker = await startTestWorker({ config, knex: stack.db.knex, logger }, stack.native);
    try {
      const erasureId = randomUUID();
      await insertErasure(stack.db.knex, {
        id: erasureId,
        subjectKind: 'candidate_id',
        subjectKeys: [subjectKey(DEVELOPMENT_SUBJECT_INDEX_KEY, 'candidate_id', candidateId)!],
        keyIds: ['development'],
        companyId: null,
        requestedBy: 'test',
      });
      await gateway.startErasure(erasureId);
      const record = () => stack.db.knex('erasures').where({ id: erasureId }).first();
      await eventually('the erasing transaction', async () => (await record()).webhooks_found !== null);
      await worker.stop();
      const stopped = await record();
      assert.deepEqual([stopped.status, stopped.webhooks_found, stopped.deliveries_cancelled], ['pending', 2, 1]);
      await new Promise((resolve) => setTimeout(resolve, 2000));
      assert.equal((await record()).status, 'pending', 'nothing goes on without a worker');
      worker = await startTestWorker({ config, knex: stack.db.knex, logger }, stack.native);
      const view = await completed(erasureId);
      assert.deepEqual(
        [view.webhooks_found, view.deliveries_cancelled, view.bodies_removed, view.runs_deleted, view.runs_gone],
        [2, 1, 2, 2, 2],
      );
      for (const { workflow_id: workflowId } of webhooks)
        assert.equal(await knownToTemporal(workflowId), false, workflowId);
      assert.equal(requestsFor(webhooks[1].webhook_id).length, 1);
    } finally {
      await worker.stop();
      await gateway.close();
    }
  });

  it('indexes rows written before the subject index in batches, from their bodies, and passes none', async () => {
    const candidateId = `c-${randomUUID()}`;
    const rows = 1234;
    await stack.db.knex.raw(
      `INSERT INTO webhook_events (id, event_id, event_type, action, company_id, body, workflow_id, status, subject_keys)
       SELECT gen_random_uuid(), 'old-' || gen_random_uuid(), 'candidate', 'new', 'acme',
              json_build_object('event_type', 'candidate', 'action', 'new', 'data', json_build_object('candidate', json_build_object('id', ?::text, 'email', 'Old-' || i || '@Example.org'))),
              'old-run-' || gen_random_uuid(), 'delivered', NULL
         FROM generate_series(1, ${rows}) AS i`,
      [candidateId],
    );
    const steps = createErasureActivities({
      config: () => stack.config,
      knex: stack.db.knex,
      workflowService: stack.native.workflowService,
    });
    assert.equal(await steps.indexUnindexedWebhooks(null), null);
    const unindexed = await stack.db
      .knex('webhook_events')
      .whereNull('subject_keys')
      .whereNull('payload_removed_at')
      .count({ n: '*' });
    assert.equal(Number(unindexed[0].n), 0);
    const key = subjectKey(DEVELOPMENT_SUBJECT_INDEX_KEY, 'candidate_id', candidateId)!;
    const found = await stack.db
      .knex('webhook_events')
      .whereRaw('subject_keys @> ARRAY[?::text]', [key])
      .count({ n: '*' });
    assert.equal(Number(found[0].n), rows);
    const byAddress = await stack.db
      .knex('webhook_events')
      .whereRaw('subject_keys @> ARRAY[?::text]', [
        subjectKey(DEVELOPMENT_SUBJECT_INDEX_KEY, 'email', 'old-77@example.org')!,
      ])
      .count({ n: '*' });
    assert.equal(Number(byAddress[0].n), 1);
    await stack.db.knex('webhook_events').where('workflow_id', 'like', 'old-run-%').del();
  });

  it('answers as /openapi.json documents: 202, 200 pending and completed, 400, 404, 415', async () => {
    const doc: Doc = await (await fetch(`${stack.api.url}/openapi.json`)).json();
    const documented = documentedAnswers(doc);
    const accepted = await erase({ email: `nobody-${randomUUID()}@example.org`, company_id: 'acme' });
    documented('/internal/v1/erasures', 'post', accepted);
    const one = '/internal/v1/erasures/{erasure_id}';
    documented(one, 'get', await call('GET', `/internal/v1/erasures/${accepted.body.erasure_id}`));
    await completed(accepted.body.erasure_id, 30_000);
    documented(one, 'get', await call('GET', `/internal/v1/erasures/${accepted.body.erasure_id}`));
    documented(one, 'get', await call('GET', `/internal/v1/erasures/${randomUUID()}`));
    documented('/internal/v1/erasures', 'post', await erase({ email: 'nope' }));
    documented(
      '/internal/v1/erasures',
      'post',
      await call('POST', '/internal/v1/erasures', 'x', { 'content-type': 'text/plain' }),
    );
  });

  describe('bad requests', () => {
    const count = async () => Number((await stack.db.knex('erasures').count({ n: '*' }))[0].n);
    const invalid = (errors: Array<{ path: string; message: string }>) => ({ detail: 'Invalid request.', errors });

    it('answers 400 with one error per problem, and records nothing', async () => {
      const before = await count();
      const cases: Array<[unknown, object]> = [
        [{}, invalid([{ path: '(root)', message: 'give candidate_id, email or phone' }])],
        [
          { candidate_id: 'c-1', email: 'a@example.org' },
          invalid([{ path: '(root)', message: 'give one of candidate_id, email or phone, not several' }]),
        ],
        [
          { email: 'a@example.org', phone: '+44 20 7946 0000' },
          invalid([{ path: '(root)', message: 'give one of candidate_id, email or phone, not several' }]),
        ],
        [[], invalid([{ path: '(root)', message: 'must be an object with candidate_id, email or phone' }])],
        [{ phone: 'call me' }, invalid([{ path: 'phone', message: PHONE_MESSAGE }])],
        [{ phone: '12345' }, invalid([{ path: 'phone', message: PHONE_MESSAGE }])],
        [{ phone: 44 }, invalid([{ path: 'phone', message: 'must be a string' }])],
        [{ candidate_id: '   ' }, invalid([{ path: 'candidate_id', message: 'must not be blank' }])],
        [{ subject: 'x' }, invalid([{ path: '(root)', message: 'give candidate_id, email or phone' }])],
        [{ email: '' }, invalid([{ path: 'email', message: 'must not be empty' }])],
        [{ email: 'not an address' }, invalid([{ path: 'email', message: 'must be an e-mail address' }])],
        [{ candidate_id: '' }, invalid([{ path: 'candidate_id', message: 'must not be empty' }])],
        [{ candidate_id: 7 }, invalid([{ path: 'candidate_id', message: 'must be a string' }])],
        [{ candidate_id: 'c-1', company_id: '' }, invalid([{ path: 'company_id', message: 'must not be empty' }])],
        [{ candidate_id: 'c-1', extra: true }, invalid([{ path: 'extra', message: 'unknown field' }])],
      ];
      for (const [body, expected] of cases) {
        const response = await erase(body);
        assert.deepEqual(
          { status: response.status, body: response.body },
          { status: 400, body: expected },
          JSON.stringify(body),
        );
      }
      assert.deepEqual((await call('POST', '/internal/v1/erasures', '{"email":', {})).status, 400);
      const wrongType = await call('POST', '/internal/v1/erasures', 'candidate_id=c-1', {
        'content-type': 'text/plain',
      });
      assert.deepEqual(
        { status: wrongType.status, body: wrongType.body },
        { status: 415, body: { detail: 'Unsupported media type "text/plain" in request: send application/json.' } },
      );
      assert.equal(await count(), before);
    });

    it('answers 404 for an unknown or malformed erasure id, and 401 without the token', async () => {
      for (const id of [randomUUID(), 'not-a-uuid', randomUUID().toUpperCase()]) {
        const response = await call('GET', `/internal/v1/erasures/${id}`);
        assert.deepEqual(
          { status: response.status, body: response.body },
          { status: 404, body: { detail: 'Not found.' } },
          id,
        );
      }
      const anonymous = await fetch(`${stack.api.url}/internal/v1/erasures`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"candidate_id":"c-1"}',
      });
      assert.equal(anonymous.status, 401);
      assert.deepEqual(await anonymous.json(), { detail: 'Authentication credentials were not provided.' });
    });
  });
});
