// The audit trail of an operator's changes (application/access/audit.ts), through the internal API with a named token
// and through the CLI: each action's row read back with SQL, one success and one failure, the same-transaction
// rule, and the actor in the identity of the Temporal events the change made.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { temporal } from '@temporalio/proto';
import { startApiServer, type ApiServer } from '../../api/server';
import { issueApiToken } from '../../lib/api-token';
import { cliActor, temporalIdentityOf } from '../../lib/actor';
import { loadConfig } from '../../lib/config';
import { createLogger } from '../../lib/logger';
import { prepareWebhook } from '../../application/ingestion/start-webhook';
import { insertApiToken } from '../../store/access/api-tokens';
import { webhookStatusQuery } from '../../workflows/webhooks/messages';
import { erasureWorkflowId } from '../../workflows/types';
import candidateNew from '../fixtures/events/candidate-new.json';
import { runSourceCli } from '../support/cli';
import { eventually } from '../support/eventually';
import { startWebhookStack, type WebhookStack } from '../support/webhook-stack';
import { closedPort } from '../support/partner-server';
import { resetAuditTrail } from '../support/audit-trail';
import { PARTNER_TOKEN } from '../support/tokens';

const { EventType } = temporal.api.enums.v1;
const ACTOR = 'ops-bot';

interface AuditRow {
  actor: string;
  action: string;
  target: string | null;
  parameters: Record<string, unknown>;
  outcome: string;
  error: string | null;
  request_id: string | null;
}

describe('audit trail of operator changes (API and CLI, a real dev server)', function () {
  this.timeout(180_000);
  let stack: WebhookStack;
  let secret: string;
  /** An API whose Temporal is a closed port: every Temporal call fails for certain. */
  let downApi: ApiServer;
  const answers = new Map<string, number>();

  before(async () => {
    stack = await startWebhookStack({
      env: { PARTNER_MAX_PER_SECOND: '1000' },
      partnerHandler: (req, res) => res.writeHead(answers.get(String(req.headers['webhook-id'])) ?? 204).end(),
    });
    const issued = issueApiToken();
    secret = issued.secret;
    await insertApiToken(stack.db.knex, {
      id: issued.id,
      name: ACTOR,
      scopes: ['ingest', 'read', 'operate', 'erase'],
      hashed: issued.hashed,
      createdBy: 'test',
      expiresAt: null,
    });
    // The token checker reloads every second.
    await eventually(
      'the named token is known',
      async () => (await call('GET', '/internal/v1/partner')).status === 200,
    );
    const downConfig = loadConfig({
      TEMPORAL_ADDRESS: `127.0.0.1:${await closedPort()}`,
      TEMPORAL_TASK_QUEUE: stack.config.TEMPORAL_TASK_QUEUE,
      INTERNAL_API_TOKEN: 'down-internal-token-0123456',
    });
    downApi = await startApiServer(
      { config: downConfig, knex: stack.db.knex, logger: createLogger('silent') },
      0,
      '127.0.0.1',
    );
    await eventually(
      'the named token is known to the second API',
      async () => (await call('GET', '/internal/v1/partner', undefined, {}, downApi)).status === 200,
    );
  });

  after(async () => {
    await downApi?.close();
    await stack?.close();
  });

  beforeEach(async () => {
    await resetAuditTrail(stack.db.knex);
    await stack.db.knex('partner_gate').del();
  });

  async function call(
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
    api: ApiServer = stack.api,
  ) {
    const response = await fetch(`${api.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${secret}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return {
      status: response.status,
      body: (await response.json()) as Record<string, any>,
      requestId: response.headers.get('x-request-id'),
    };
  }

  /**
   * The outcome rows, in order. Every intent row (a call to Temporal) must have exactly one outcome row of the
   * same operation, action, target and actor, written after it.
   */
  const auditRows = async (): Promise<AuditRow[]> => {
    const all = await stack.db
      .knex('audit_events')
      .orderBy('seq')
      .select(
        'seq',
        'phase',
        'operation_id',
        'actor',
        'action',
        'target',
        'parameters',
        'outcome',
        'error',
        'request_id',
      );
    for (const intent of all.filter((r) => r.phase === 'intent')) {
      const outcomes = all.filter((r) => r.phase === 'outcome' && r.operation_id === intent.operation_id);
      assert.equal(outcomes.length, 1, `the outcome of ${intent.action} ${intent.target}`);
      assert.ok(Number(outcomes[0].seq) > Number(intent.seq));
      assert.deepEqual(
        [outcomes[0].actor, outcomes[0].action, outcomes[0].target],
        [intent.actor, intent.action, intent.target],
      );
    }
    return all
      .filter((r) => r.phase === 'outcome')
      .map(({ actor, action, target, parameters, outcome, error, request_id }) => ({
        actor,
        action,
        target,
        parameters,
        outcome,
        error,
        request_id,
      }));
  };
  const row = (
    action: string,
    target: string | null,
    parameters: Record<string, unknown>,
    outcome: 'succeeded' | 'failed',
    error: string | null,
    requestId: string | null,
    actor = ACTOR,
  ): AuditRow => ({
    actor,
    action,
    target,
    parameters,
    outcome,
    error,
    request_id: requestId,
  });
  const queue = () => stack.config.TEMPORAL_TASK_QUEUE;

  const candidate = () => {
    const event = structuredClone(candidateNew);
    event.event_id = `audit-${randomUUID()}`;
    // A candidate of its own: per-entity ordering would queue one candidate's webhooks behind its waiting one.
    event.data.candidate.id = `c-${randomUUID()}`;
    return event;
  };
  /** A delivery whose first attempt failed: it waits for attempt 2. */
  async function waitingDelivery() {
    const event = candidate();
    const { webhookId } = prepareWebhook(event);
    answers.set(webhookId, 500);
    const accepted = await call('POST', '/internal/v1/webhooks', event);
    assert.equal(accepted.status, 202);
    const handle = stack.client.workflow.getHandle(accepted.body.workflow_id);
    await eventually('the waiting state', async () => (await handle.query(webhookStatusQuery)).state === 'waiting');
    await eventually(
      'the first record',
      async () => (await stack.db.knex('webhook_attempts').where({ webhook_id: webhookId })).length === 1,
    );
    return { webhookId, workflowId: accepted.body.workflow_id as string };
  }
  async function delivered() {
    const accepted = await call('POST', '/internal/v1/webhooks', candidate());
    await stack.client.workflow.getHandle(accepted.body.workflow_id).result();
    return { webhookId: accepted.body.webhook_id as string, workflowId: accepted.body.workflow_id as string };
  }
  const historyOf = async (workflowId: string) =>
    (await stack.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  /** The gate's pause and cap; the same with no row (the worker's partner recovery may write one). */
  const gate = async () => {
    const current = await stack.db
      .knex('partner_gate')
      .where({ task_queue: queue() })
      .first('pause_reason', 'max_per_second');
    return { pause_reason: current?.pause_reason ?? null, max_per_second: current?.max_per_second ?? null };
  };

  describe('through the API, with a named token and X-Request-Id', () => {
    it('partner pause, resume and limit: a row each with the settings; refused input is a failed row with no parameters', async () => {
      assert.equal(
        (
          await call(
            'POST',
            '/internal/v1/partner/pause',
            { reason: 'partner maintenance' },
            { 'X-Request-Id': 'req-pause' },
          )
        ).status,
        200,
      );
      assert.equal(
        (await call('POST', '/internal/v1/partner/resume', undefined, { 'X-Request-Id': 'req-resume' })).status,
        200,
      );
      assert.equal(
        (await call('POST', '/internal/v1/partner/limit', { max_per_second: 5 }, { 'X-Request-Id': 'req-limit' }))
          .status,
        200,
      );
      const refusedPause = await call(
        'POST',
        '/internal/v1/partner/pause',
        { reason: '  ' },
        { 'X-Request-Id': 'req-bad-pause' },
      );
      assert.equal(refusedPause.status, 400);
      const refusedLimit = await call('POST', '/internal/v1/partner/limit', { max_per_second: 0 });
      assert.equal(refusedLimit.status, 400);
      assert.deepEqual(await auditRows(), [
        row('partner.pause', queue(), { reason: 'partner maintenance' }, 'succeeded', null, 'req-pause'),
        row('partner.resume', queue(), {}, 'succeeded', null, 'req-resume'),
        row('partner.limit', queue(), { max_per_second: 5 }, 'succeeded', null, 'req-limit'),
        row(
          'partner.pause',
          queue(),
          {},
          'failed',
          'InvalidRequestError: reason: must say why (1 to 500 characters)',
          'req-bad-pause',
        ),
        row(
          'partner.limit',
          queue(),
          {},
          'failed',
          'InvalidRequestError: max_per_second: Too small: expected number to be >=1',
          refusedLimit.requestId,
        ),
      ]);
      assert.deepEqual(await gate(), { pause_reason: null, max_per_second: 5 });
    });

    it('the change and its row are one transaction: when the row cannot be written, the gate is unchanged and only the failure is recorded', async () => {
      // A trigger (this test's only) refuses every succeeded row, as a failing INSERT of the row would.
      await stack.db.knex.raw(`
        CREATE FUNCTION refuse_succeeded_audit() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'audit row refused by the test'; END $$;
        CREATE TRIGGER refuse_succeeded_audit BEFORE INSERT ON audit_events FOR EACH ROW WHEN (NEW.outcome = 'succeeded') EXECUTE FUNCTION refuse_succeeded_audit();`);
      try {
        const response = await call(
          'POST',
          '/internal/v1/partner/pause',
          { reason: 'half change?' },
          { 'X-Request-Id': 'req-rollback' },
        );
        assert.equal(response.status, 500);
      } finally {
        await stack.db.knex.raw(
          'DROP TRIGGER refuse_succeeded_audit ON audit_events; DROP FUNCTION refuse_succeeded_audit();',
        );
      }
      assert.deepEqual(await gate(), { pause_reason: null, max_per_second: null }, 'no pause was written');
      assert.deepEqual(await auditRows(), [
        row(
          'partner.pause',
          queue(),
          { reason: 'half change?' },
          'failed',
          'error: audit row refused by the test',
          'req-rollback',
        ),
      ]);
    });

    it('retry-now, cancel and redeliver: a row each; 404 and 409 are failed rows; the actor is in the identity of each Temporal event', async () => {
      const waiting = await waitingDelivery();
      const retried = await call('POST', `/internal/v1/webhooks/${waiting.webhookId}/retry-now`, undefined, {
        'X-Request-Id': 'req-retry',
      });
      assert.equal(retried.status, 202);
      await eventually(
        'waiting again after the retried attempt',
        async () => (await stack.db.knex('webhook_attempts').where({ webhook_id: waiting.webhookId })).length === 2,
      );
      await eventually(
        'waiting',
        async () =>
          (await stack.client.workflow.getHandle(waiting.workflowId).query(webhookStatusQuery)).state === 'waiting',
      );
      assert.equal(
        (
          await call('POST', `/internal/v1/webhooks/${waiting.webhookId}/cancel`, undefined, {
            'X-Request-Id': 'req-cancel',
          })
        ).status,
        202,
      );
      const done = await delivered();
      const redelivered = await call('POST', `/internal/v1/webhooks/${done.webhookId}/redeliver`, undefined, {
        'X-Request-Id': 'req-redeliver',
      });
      assert.equal(redelivered.status, 202);
      const unknown = randomUUID();
      assert.equal(
        (await call('POST', `/internal/v1/webhooks/${unknown}/cancel`, undefined, { 'X-Request-Id': 'req-cancel-404' }))
          .status,
        404,
      );
      assert.equal(
        (
          await call('POST', `/internal/v1/webhooks/${done.webhookId}/retry-now`, undefined, {
            'X-Request-Id': 'req-retry-409',
          })
        ).status,
        409,
      );
      assert.equal(
        (
          await call('POST', `/internal/v1/webhooks/${unknown}/redeliver?allow_expired_links=true`, undefined, {
            'X-Request-Id': 'req-redeliver-404',
          })
        ).status,
        404,
      );
      assert.deepEqual(await auditRows(), [
        row('webhook.retry_now', waiting.webhookId, {}, 'succeeded', null, 'req-retry'),
        row('webhook.cancel', waiting.webhookId, {}, 'succeeded', null, 'req-cancel'),
        row('webhook.redeliver', done.webhookId, { allow_expired_links: false }, 'succeeded', null, 'req-redeliver'),
        row('webhook.cancel', unknown, {}, 'failed', `NotFoundError: No webhook ${unknown}.`, 'req-cancel-404'),
        row(
          'webhook.retry_now',
          done.webhookId,
          {},
          'failed',
          'WebhookConflictError: Cannot retry a delivery whose status is delivered.',
          'req-retry-409',
        ),
        row(
          'webhook.redeliver',
          unknown,
          { allow_expired_links: true },
          'failed',
          `NotFoundError: No webhook ${unknown}.`,
          'req-redeliver-404',
        ),
      ]);

      const identity = temporalIdentityOf(ACTOR);
      const waitingHistory = await historyOf(waiting.workflowId);
      const accepted = waitingHistory.filter(
        (e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
      );
      assert.deepEqual(
        accepted.map((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.meta?.identity),
        [identity],
      );
      const cancelRequested = waitingHistory.filter(
        (e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED,
      );
      assert.deepEqual(
        cancelRequested.map((e) => e.workflowExecutionCancelRequestedEventAttributes?.identity),
        [identity],
      );
      const [started] = await historyOf(redelivered.body.workflow_id);
      assert.equal(started.workflowExecutionStartedEventAttributes?.identity, identity);
      // Ingestion keeps the gateway's default identity.
      const [ingested] = await historyOf(done.workflowId);
      assert.notEqual(ingested.workflowExecutionStartedEventAttributes?.identity, identity);
    });

    it('bulk redelivery: a row with the filter, the limit and allow_expired_links; Temporal unavailable is a failed row', async () => {
      const done = await delivered();
      const companyId = (await stack.db.knex('webhook_events').where({ id: done.webhookId }).first('company_id'))
        .company_id as string;
      const filter = { status: 'delivered', company_id: companyId, since: '2020-01-01T00:00:00.000Z' };
      const bulk = await call(
        'POST',
        '/internal/v1/webhooks/redeliver',
        { ...filter, limit: 1 },
        { 'X-Request-Id': 'req-bulk' },
      );
      assert.equal(bulk.status, 200, JSON.stringify(bulk.body));
      const down = await call(
        'POST',
        '/internal/v1/webhooks/redeliver',
        { ...filter, limit: 3, allow_expired_links: true },
        { 'X-Request-Id': 'req-bulk-down' },
        downApi,
      );
      assert.equal(down.status, 503);
      const rows = await auditRows();
      assert.deepEqual(
        rows.map((r) => ({
          ...r,
          error: r.error && r.error.slice(0, 'OperationUnavailableError: Temporal is unavailable: '.length),
        })),
        [
          row(
            'webhooks.redeliver',
            null,
            { ...filter, limit: 1, allow_expired_links: false },
            'succeeded',
            null,
            'req-bulk',
          ),
          row(
            'webhooks.redeliver',
            null,
            { ...filter, limit: 3, allow_expired_links: true },
            'failed',
            'OperationUnavailableError: Temporal is unavailable: ',
            'req-bulk-down',
          ),
        ],
      );
    });

    it("a bulk redelivery's dry run: one outcome row of webhooks.redeliver with dry_run: true; a bad filter writes none, as for the redelivery", async () => {
      const filter = { status: 'failed', company_id: `preview-${randomUUID()}`, since: '2020-01-01T00:00:00.000Z' };
      const preview = await call(
        'POST',
        '/internal/v1/webhooks/redeliver',
        { ...filter, limit: 5, dry_run: true },
        { 'X-Request-Id': 'req-preview' },
      );
      assert.deepEqual(preview.body, {
        dry_run: true,
        would_start: 0,
        skipped_expired_links: 0,
        skipped_payload_removed: 0,
        more: false,
      });
      assert.equal(preview.status, 200);
      // It changes nothing and calls no Temporal: one transaction, so one outcome row and no intent.
      const preview2 = await call(
        'POST',
        '/internal/v1/webhooks/redeliver',
        { ...filter, allow_expired_links: true, dry_run: true },
        { 'X-Request-Id': 'req-preview-2' },
        downApi,
      );
      assert.equal(preview2.status, 200, 'a preview needs no Temporal');
      assert.equal(
        (await call('POST', '/internal/v1/webhooks/redeliver', { ...filter, status: 'waiting', dry_run: true })).status,
        400,
      );
      assert.equal(
        (await call('POST', '/internal/v1/webhooks/redeliver', { ...filter, status: 'waiting' })).status,
        400,
      );
      const all = await stack.db.knex('audit_events').orderBy('seq').select('phase');
      assert.deepEqual(
        all.map((r) => r.phase),
        ['outcome', 'outcome'],
      );
      assert.deepEqual(await auditRows(), [
        row(
          'webhooks.redeliver',
          null,
          { ...filter, limit: 5, allow_expired_links: false, dry_run: true },
          'succeeded',
          null,
          'req-preview',
        ),
        row(
          'webhooks.redeliver',
          null,
          { ...filter, limit: 10000, allow_expired_links: true, dry_run: true },
          'succeeded',
          null,
          'req-preview-2',
        ),
      ]);
    });

    it('an erasure: one row with the subject kind and company, never the subject; bad input and a start that failed are failed rows', async () => {
      const email = `ada-${randomUUID()}@example.com`;
      const requested = await call(
        'POST',
        '/internal/v1/erasures',
        { email, company_id: 'acme' },
        { 'X-Request-Id': 'req-erase' },
      );
      assert.equal(requested.status, 202);
      const erasureId = requested.body.erasure_id as string;
      const refused = await call(
        'POST',
        '/internal/v1/erasures',
        { email: 'not-an-address' },
        { 'X-Request-Id': 'req-erase-bad' },
      );
      assert.equal(refused.status, 400);
      const down = await call(
        'POST',
        '/internal/v1/erasures',
        { candidate_id: 'cand-42' },
        { 'X-Request-Id': 'req-erase-down' },
        downApi,
      );
      assert.equal(down.status, 503);
      const rows = await auditRows();
      const downId = rows[2].target;
      assert.deepEqual(
        rows.map((r) => ({ ...r, error: r.error?.split(' (')[0] ?? null })),
        [
          row(
            'erasure.request',
            erasureId,
            { subject_kind: 'email', company_id: 'acme' },
            'succeeded',
            null,
            'req-erase',
          ),
          row(
            'erasure.request',
            null,
            {},
            'failed',
            'InvalidRequestError: email: must be an e-mail address',
            'req-erase-bad',
          ),
          // The record and its intent are committed together, before the start; the failed start is its outcome.
          row(
            'erasure.request',
            downId,
            { subject_kind: 'candidate_id', company_id: null },
            'failed',
            'ErasureNotStartedError: The erasure was not started, since Temporal is unavailable',
            'req-erase-down',
          ),
        ],
      );
      assert.equal(
        await stack.db.knex('erasures').where({ id: downId }).first(),
        undefined,
        'the unstarted erasure was taken back',
      );
      assert.equal(
        (await stack.db.knex('erasures').where({ id: erasureId }).first('requested_by')).requested_by,
        ACTOR,
      );
      const text = JSON.stringify(await stack.db.knex('audit_events').select('*'));
      assert.equal(
        text.includes(email) || text.includes('cand-42') || text.includes(secret),
        false,
        'no subject and no secret in an audit row',
      );
      const [started] = await historyOf(erasureWorkflowId(erasureId));
      assert.equal(started.workflowExecutionStartedEventAttributes?.identity, temporalIdentityOf(ACTOR));
    });
  });

  describe('through the CLI, as cli:<user>@<host>', () => {
    const cli = (args: string[], env: Record<string, string> = {}) =>
      runSourceCli(args, {
        DATABASE_URL: stack.db.url,
        TEMPORAL_ADDRESS: stack.server.address,
        TEMPORAL_TASK_QUEUE: queue(),
        PARTNER_ENDPOINT: stack.partner.url,
        PARTNER_ACCESS_TOKEN: PARTNER_TOKEN,
        LOG_LEVEL: 'warn',
        ...env,
      });
    const actor = cliActor();

    it('partner pause, resume and limit, and a refused limit', async () => {
      assert.equal((await cli(['partner', 'pause', '--reason', 'cli drill'])).code, 0);
      assert.equal((await cli(['partner', 'resume'])).code, 0);
      assert.equal((await cli(['partner', 'limit', '9'])).code, 0);
      const refused = await cli(['partner', 'limit', '0']);
      assert.equal(refused.code, 2);
      assert.deepEqual(await auditRows(), [
        row('partner.pause', queue(), { reason: 'cli drill' }, 'succeeded', null, null, actor),
        row('partner.resume', queue(), {}, 'succeeded', null, null, actor),
        row('partner.limit', queue(), { max_per_second: 9 }, 'succeeded', null, null, actor),
        row(
          'partner.limit',
          queue(),
          {},
          'failed',
          'InvalidRequestError: max_per_second: Too small: expected number to be >=1',
          null,
          actor,
        ),
      ]);
    });

    it('webhooks cancel, retry-now and redeliver, with failures, and the actor in Temporal', async () => {
      const waiting = await waitingDelivery();
      const done = await delivered();
      const unknown = randomUUID();
      assert.equal((await cli(['webhooks', 'cancel', waiting.webhookId])).code, 0);
      assert.equal((await cli(['webhooks', 'cancel', unknown])).code, 1);
      assert.equal((await cli(['webhooks', 'retry-now', done.webhookId])).code, 1);
      const redelivered = await cli(['webhooks', 'redeliver', done.webhookId]);
      assert.equal(redelivered.code, 0, redelivered.stderr);
      assert.equal((await cli(['webhooks', 'redeliver', unknown])).code, 1);
      assert.deepEqual(await auditRows(), [
        row('webhook.cancel', waiting.webhookId, {}, 'succeeded', null, null, actor),
        row('webhook.cancel', unknown, {}, 'failed', `NotFoundError: No webhook ${unknown}.`, null, actor),
        row(
          'webhook.retry_now',
          done.webhookId,
          {},
          'failed',
          'WebhookConflictError: Cannot retry a delivery whose status is delivered.',
          null,
          actor,
        ),
        row('webhook.redeliver', done.webhookId, { allow_expired_links: false }, 'succeeded', null, null, actor),
        row(
          'webhook.redeliver',
          unknown,
          { allow_expired_links: false },
          'failed',
          `NotFoundError: No webhook ${unknown}.`,
          null,
          actor,
        ),
      ]);
      // The CLI's process id is not this one's: the identity begins with the actor.
      const cancelRequested = (await historyOf(waiting.workflowId)).find(
        (e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED,
      );
      const cliIdentity = new RegExp(`^${actor.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} via partner-service \\d+@`);
      assert.match(String(cancelRequested?.workflowExecutionCancelRequestedEventAttributes?.identity), cliIdentity);
      const [started] = await historyOf(JSON.parse(redelivered.stdout).workflow_id);
      assert.match(String(started.workflowExecutionStartedEventAttributes?.identity), cliIdentity);
    });

    it('erase, and an erase whose start failed', async () => {
      const ok = await cli(['erase', '--candidate-id', 'cand-cli-1']);
      assert.equal(ok.code, 0, ok.stderr);
      const erasureId = JSON.parse(ok.stdout.split('\n')[0]).erasure_id as string;
      const down = await cli(['erase', '--candidate-id', 'cand-cli-2', '--company', 'acme'], {
        TEMPORAL_ADDRESS: `127.0.0.1:${await closedPort()}`,
      });
      assert.equal(down.code, 1, down.stderr);
      const rows = await auditRows();
      const downId = rows[1].target;
      assert.deepEqual(
        rows.map((r) => ({ ...r, error: r.error?.split(' (')[0] ?? null })),
        [
          row(
            'erasure.request',
            erasureId,
            { subject_kind: 'candidate_id', company_id: null },
            'succeeded',
            null,
            null,
            actor,
          ),
          row(
            'erasure.request',
            downId,
            { subject_kind: 'candidate_id', company_id: 'acme' },
            'failed',
            'ErasureNotStartedError: The erasure was not started, since Temporal is unavailable',
            null,
            actor,
          ),
        ],
      );
      assert.equal(
        (await stack.db.knex('erasures').where({ id: erasureId }).first('requested_by')).requested_by,
        actor,
      );
    });
  });
});
