// The least-privilege drill: the service's own processes (`partner-service api` and `partner-service worker`)
// at LOG_LEVEL=trace on a real dev server, PostgreSQL and a loopback partner. Tokens are created with the CLI;
// webhooks are ingested with an ingest-only token; then every operator action is made through the API (with
// operate- and erase-scoped tokens) and through the CLI: partner pause, resume and limit; webhook cancel,
// retry-now, redeliver one and bulk redeliver; an erasure; token create and revoke; an import, an app created
// and revoked, a webhook sent and a test send, a reindex, a refused reseal, a retention run that purges an
// audit row; and two changes that fail. Then:
// - `partner-service audit list` holds exactly those rows, each with its actor (the token's name, or
//   cli:<user>@<host>), target, outcome and request id, every intent with its outcome; the chain verifies;
// - every subcommand whose `auditActions` (cli/command.ts) and every internal operation whose `x-audit-actions`
//   (the OpenAPI document) lists an action was run by the drill, and its actions are in the trail: a new
//   audited command or route that the drill does not make fails here;
// - the Temporal events of the cancels, retry-nows and starts (redeliveries, erasures), read back from the
//   server, carry the actor in their identity;
// - no secret (the named tokens, INTERNAL_API_TOKEN, the partner token, an app key) is in any log line, audit
//   row, response body or workflow history of the whole drill.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { findFreePort } from '../../lib/ports';
import { openApiDocument } from '../../api/openapi/document';
import { commands } from '../../cli/commands';
import { cliActor } from '../../lib/actor';
import { AUDIT_ACTIONS } from '../../lib/vocabulary';
import { erasureWorkflowId } from '../../workflows/types';
import type { DevServer } from '../../temporal/dev-server';
import candidateNew from '../fixtures/events/candidate-new-short.json';
import { runCli, type CliResult } from '../support/cli';
import { serviceProcesses, stopServiceFixtures } from '../support/service-processes';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { eventually } from '../support/eventually';
import { historyTexts } from '../support/history';
import { partnerOperations, internalOperations } from '../support/openapi';
import { startTestDevServer, tempDir } from '../support/temporal';
import { answerByScript, startPartnerServer, type PartnerServer } from '../support/partner-server';
import { linesOf } from '../support/log-lines';

const { EventType } = temporal.api.enums.v1;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

const SHARED_TOKEN = `drill-shared-${randomUUID()}`;
const PARTNER_TOKEN = `drill-partner-${randomUUID()}`;
const ROOT = path.join(__dirname, '..', '..');

/** The tokens the drill creates with the CLI: name and scopes. */
const TOKENS = {
  ingest: ['drill-ingest', 'ingest'],
  operator: ['drill-operator', 'read,operate'],
  eraser: ['drill-eraser', 'erase'],
  reader: ['drill-reader', 'read'],
  spare: ['drill-spare', 'ingest'],
} as const;
type TokenRole = keyof typeof TOKENS;

/** A candidate event of its own company (so a bulk redelivery can pick it alone) and candidate id. */
function drillEvent(tag: string) {
  return {
    ...candidateNew,
    event_id: `drill-${tag}-${randomUUID()}`,
    data: {
      ...candidateNew.data,
      company: { ...candidateNew.data.company, id: `drill-co-${tag}` },
      candidate: { ...candidateNew.data.candidate, id: `drill-candidate-${tag}-${randomUUID().slice(0, 8)}` },
    },
  };
}

describe('least-privilege drill: named tokens, every operator action audited with its actor, in Temporal too, and no secret anywhere', function () {
  this.timeout(300_000);
  let work: string;
  let server: DevServer;
  let serverPort: number;
  let partner: PartnerServer;
  let db: TestDatabase;
  let connection: Connection | undefined;
  /** Per webhook-id header: the partner's answers in order; the last repeats. */
  const script = new Map<string, number[]>();

  before(async function () {
    this.timeout(60_000);
    work = await tempDir('least-privilege-drill');
    serverPort = await findFreePort();
    // Side by side; each is kept as soon as it is up, so that `after` stops whatever started.
    await Promise.all([
      startTestDevServer({ dbFilename: path.join(work, 'temporal.db'), port: serverPort }).then(
        (started) => (server = started),
      ),
      createTestDatabase().then((created) => (db = created)),
      startPartnerServer(answerByScript(script)).then((started) => (partner = started)),
    ]);
  });

  after(async function () {
    this.timeout(60_000);
    await connection?.close();
    await stopServiceFixtures(processes, { partner, db, server, work });
  });

  const processes = serviceProcesses(
    () => ({ work, databaseUrl: db.url, temporalPort: serverPort, partnerUrl: partner.url }),
    {
      INTERNAL_API_TOKEN: SHARED_TOKEN,
      LOG_LEVEL: 'trace',
    },
  );

  it('records every action of the API and the CLI with its actor, carries the actor into Temporal, and leaks no secret', async () => {
    const queue = `least-privilege-drill-${randomUUID()}`;
    // A row older than AUDIT_RETENTION_DAYS, first in the chain: the retention run's purge removes it.
    await db.knex('audit_events').insert({
      at: new Date(Date.now() - 400 * 86_400_000),
      actor: 'drill-old',
      action: 'partner.pause',
      target: queue,
      parameters: {},
      outcome: 'succeeded',
    });
    const drillStart = new Date().toISOString();
    const me = cliActor();
    await processes.startWorker(queue, { PARTNER_ACCESS_TOKEN: PARTNER_TOKEN });
    const api = await processes.startApi(queue);

    const cliRuns: Array<{ args: string[]; result: CliResult }> = [];
    const cli = async (...args: string[]) => {
      const result = await runCli(
        args,
        { ...processes.common(queue), PARTNER_ENDPOINT: partner.url, PARTNER_ACCESS_TOKEN: PARTNER_TOKEN },
        work,
      );
      cliRuns.push({ args, result });
      return result;
    };
    const cliJson = async (...args: string[]) => {
      const result = await cli(...args);
      assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
      return JSON.parse(result.stdout.trim().split('\n').at(-1)!) as Record<string, any>;
    };

    const secrets: Partial<Record<TokenRole, string>> = {};
    /** Every API answer of the drill, as text, and the X-Request-Id of every call. */
    const responses: string[] = [];
    const requestIds: string[] = [];
    /** Every API call of the drill: method and route. */
    const calls: Array<{ method: string; route: string }> = [];
    const call = async (role: TokenRole | 'shared', method: string, route: string, body?: unknown) => {
      calls.push({ method, route });
      const requestId = `drill-${requestIds.length + 1}-${randomUUID().slice(0, 8)}`;
      requestIds.push(requestId);
      const response = await fetch(`${api}${route}`, {
        method,
        headers: {
          authorization: `Bearer ${role === 'shared' ? SHARED_TOKEN : secrets[role]}`,
          'x-request-id': requestId,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await response.text();
      responses.push(text);
      return {
        status: response.status,
        requestId,
        returnedId: response.headers.get('x-request-id'),
        body: JSON.parse(text) as Record<string, any>,
      };
    };
    const statusOf = async (webhookId: string) =>
      (await call('reader', 'GET', `/internal/v1/webhooks/${webhookId}`)).body;
    const liveState = async (webhookId: string) =>
      ((await statusOf(webhookId)).live as { state?: string } | null)?.state;
    /** The request ids of operator changes made through the API, which their audit rows must carry. */
    const auditedRequestIds: string[] = [];
    const change = async (role: TokenRole, method: string, route: string, body?: unknown) => {
      const answer = await call(role, method, route, body);
      assert.equal(answer.returnedId, answer.requestId, `${method} ${route}: X-Request-Id sent back`);
      auditedRequestIds.push(answer.requestId);
      return answer;
    };

    // Tokens, created with the CLI: each printed once, as JSON.
    for (const [role, [name, scopes]] of Object.entries(TOKENS) as Array<[TokenRole, readonly [string, string]]>) {
      const created = await cliJson('tokens', 'create', '--name', name, '--scope', scopes);
      assert.equal(created.name, name);
      assert.deepEqual(created.scopes, scopes.split(','));
      assert.match(created.token, /^pis_[0-9a-f]{32}_[A-Za-z0-9_-]{43}$/);
      secrets[role] = created.token;
    }
    // An app key, to have one more secret in flight (the partner REST API).
    assert.equal((await cli('import', path.join(ROOT, 'examples', 'demo-directory.json'))).code, 0);
    const app = await cliJson('apps', 'create', '--name', 'drill-app', '--company', 'acme', '--json');
    const listing = await fetch(`${api}/v1/companies/acme/users/`, {
      headers: { 'x-app-id': app.app_id, 'x-app-key': app.app_key },
    });
    assert.equal(listing.status, 200);
    responses.push(await listing.text());
    // Its scopes widened to the partner API as well, by the CLI.
    assert.equal(
      (await cli('apps', 'scopes', app.app_id, '--scope', 'listings', '--scope', 'deliveries:read')).code,
      0,
    );
    // A portal link for it, by the CLI: its token is one more secret, printed once.
    const portalLink = await cliJson('portal', 'link', '--app', app.app_id, '--ttl', '120', '--json');
    assert.match(portalLink.url, /^http:\/\/localhost:\d+\/portal#token=[0-9a-f-]{36}\.[\w-]{43}$/);
    assert.deepEqual(portalLink.scopes, ['listings', 'deliveries:read']);
    const portalSecret = (portalLink.url as string).split('.').at(-1)!;

    // Ingestion with the ingest-only token, once the api process has read the new tokens (within 1 s).
    const events = Object.fromEntries(
      [
        'apiRetried',
        'apiCancelled',
        'apiRedelivered',
        'cliRetried',
        'cliCancelled',
        'cliRedelivered',
        'apiErased',
        'cliErased',
      ].map((tag) => [tag, drillEvent(tag)]),
    );
    const ingest = (event: unknown, role: TokenRole = 'ingest') => call(role, 'POST', '/internal/v1/webhooks', event);
    let first: Awaited<ReturnType<typeof ingest>> | undefined;
    await eventually(
      'the api process accepts the new ingest token',
      async () => (first = await ingest(events.apiRedelivered)).status === 202,
      10_000,
    );
    const ids: Record<string, string> = { apiRedelivered: first!.body.webhook_id };
    const workflowIds: Record<string, string> = { apiRedelivered: first!.body.workflow_id };
    // The retried ones fail twice, then succeed: after the second failure the next attempt is 100 s away, so
    // the retry-now (not a timer) makes the third. The cancelled ones fail every time.
    const answers: Record<string, number[]> = {
      apiRetried: [503, 503, 204],
      cliRetried: [503, 503, 204],
      apiCancelled: [503],
      cliCancelled: [503],
    };
    for (const tag of [
      'apiRetried',
      'apiCancelled',
      'cliRetried',
      'cliCancelled',
      'cliRedelivered',
      'apiErased',
      'cliErased',
    ]) {
      const accepted = await ingest(events[tag]);
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      ids[tag] = accepted.body.webhook_id;
      workflowIds[tag] = accepted.body.workflow_id;
      if (answers[tag]) script.set(ids[tag], answers[tag]);
    }
    // The shared token reads too (it has every scope), and is one more secret in flight.
    assert.equal((await call('shared', 'GET', '/internal/v1/partner')).status, 200);
    // The ingest token may not operate: 403 names the scope, and nothing is recorded.
    const refused = await call('ingest', 'POST', `/internal/v1/webhooks/${ids.apiCancelled}/cancel`);
    assert.equal(refused.status, 403);
    assert.deepEqual(refused.body, {
      detail: 'The token "drill-ingest" does not have the scope "operate", which this request needs.',
      reason: 'missing_scope',
    });

    for (const tag of ['apiCancelled', 'cliCancelled'])
      await eventually(`${tag} waits for its retry`, async () => (await liveState(ids[tag])) === 'waiting');
    for (const tag of ['apiRetried', 'cliRetried']) {
      await eventually(`${tag} waits after its second failure`, async () => {
        const status = await statusOf(ids[tag]);
        return status.attempts.length === 2 && status.live?.state === 'waiting';
      });
    }
    for (const tag of ['apiRedelivered', 'cliRedelivered'])
      await eventually(`${tag} delivered`, async () => (await statusOf(ids[tag])).status === 'delivered');

    // Webhook operations through the API, with the operator token.
    assert.equal((await change('operator', 'POST', `/internal/v1/webhooks/${ids.apiRetried}/retry-now`)).status, 202);
    assert.equal((await change('operator', 'POST', `/internal/v1/webhooks/${ids.apiCancelled}/cancel`)).status, 202);
    const apiRedelivery = await change('operator', 'POST', `/internal/v1/webhooks/${ids.apiRedelivered}/redeliver`);
    assert.equal(apiRedelivery.status, 202);
    await eventually(
      'the API cancel took effect',
      async () => (await statusOf(ids.apiCancelled)).status === 'cancelled',
    );
    const apiBulk = await change('operator', 'POST', '/internal/v1/webhooks/redeliver', {
      status: 'cancelled',
      company_id: 'drill-co-apiCancelled',
    });
    assert.deepEqual(apiBulk.body, { started: 1, skipped_expired_links: 0, skipped_payload_removed: 0, more: false });
    // A change that fails: retry-now of a delivered webhook.
    assert.equal(
      (await change('operator', 'POST', `/internal/v1/webhooks/${ids.apiRedelivered}/retry-now`)).status,
      409,
    );

    // The same through the CLI.
    await cliJson('webhooks', 'retry-now', ids.cliRetried);
    await cliJson('webhooks', 'cancel', ids.cliCancelled);
    const cliRedelivery = await cliJson('webhooks', 'redeliver', ids.cliRedelivered);
    await eventually(
      'the CLI cancel took effect',
      async () => (await statusOf(ids.cliCancelled)).status === 'cancelled',
    );
    assert.deepEqual(
      await cliJson('webhooks', 'redeliver', '--all', '--status', 'cancelled', '--company-id', 'drill-co-cliCancelled'),
      {
        started: 1,
        skipped_expired_links: 0,
        skipped_payload_removed: 0,
        more: false,
      },
    );
    // A change that fails: cancel of a delivered webhook.
    assert.equal((await cli('webhooks', 'cancel', ids.cliRedelivered)).code, 1);
    for (const tag of ['apiRetried', 'cliRetried'])
      await eventually(
        `${tag} delivered by its retry-now`,
        async () => (await statusOf(ids[tag])).status === 'delivered',
      );

    // The partner gate, through the API and the CLI.
    assert.equal(
      (await change('operator', 'POST', '/internal/v1/partner/pause', { reason: 'drill maintenance' })).body.state,
      'paused',
    );
    assert.equal((await change('operator', 'POST', '/internal/v1/partner/resume')).body.state, 'active');
    assert.equal(
      (await change('operator', 'POST', '/internal/v1/partner/limit', { max_per_second: 7 })).body.max_per_second,
      7,
    );
    assert.equal((await cliJson('partner', 'pause', '--reason', 'drill maintenance by CLI')).state, 'paused');
    assert.equal((await cliJson('partner', 'resume')).state, 'active');
    assert.equal((await cliJson('partner', 'limit', '9')).max_per_second, 9);

    // Per-entity ordering: no key of the drill is blocked (ordering is off here), so each skip and retry is a
    // refusal, audited as a failed change like any other.
    assert.equal(
      (await change('operator', 'POST', '/internal/v1/ordering/skip', { key: 'drill-no-such-key' })).status,
      404,
    );
    assert.equal(
      (await change('operator', 'POST', '/internal/v1/ordering/retry', { key: 'drill-no-such-key' })).status,
      404,
    );
    assert.equal((await cli('ordering', 'skip', 'drill-no-such-key')).code, 1);
    assert.equal((await cli('ordering', 'retry', 'drill-no-such-key')).code, 1);

    // Erasures, through the API with the erase token and through the CLI, of candidates of their own (an
    // erasure deletes their webhooks' runs from Temporal, and the other runs are read back below).
    // A 503 (Temporal did not take the start within its bound, as on a loaded CI machine) is the documented
    // answer to retry after Retry-After, as a client would; each refused try is its own failed audit row.
    const requestErasure = () =>
      change('eraser', 'POST', '/internal/v1/erasures', { candidate_id: events.apiErased.data.candidate.id });
    const refusedErasures: string[] = [];
    let apiErasure = await requestErasure();
    while (apiErasure.status === 503 && refusedErasures.length < 3) {
      refusedErasures.push(apiErasure.requestId);
      await new Promise((resolve) => setTimeout(resolve, 5_000));
      apiErasure = await requestErasure();
    }
    assert.equal(apiErasure.status, 202, JSON.stringify(apiErasure.body));
    const cliErasure = await cliJson('erase', '--candidate-id', events.cliErased.data.candidate.id);

    // A revocation: the spare token works, then is refused by the running api process within 5 s.
    assert.equal((await ingest(drillEvent('spare'), 'spare')).status, 202);
    assert.deepEqual(await cliJson('tokens', 'revoke', 'drill-spare'), { name: 'drill-spare', revoked_by: me });
    let afterRevocation: Awaited<ReturnType<typeof ingest>> | undefined;
    await eventually(
      'the revoked token is refused',
      async () => (afterRevocation = await ingest(drillEvent('spare-after'), 'spare')).status === 401,
      5_000,
    );
    assert.deepEqual(afterRevocation!.body, { detail: 'Invalid token: it has been revoked.' });

    // The CLI's other changes: the app revoked, a webhook sent and a test send, the subject index moved to its
    // newest key, a reseal refused (no payload key here), and a retention run (which purges the old audit row).
    assert.equal((await cli('apps', 'revoke', app.app_id)).stdout, `revoked ${app.app_id}\n`);
    const sendFile = path.join(work, 'drill-send.json');
    await writeFile(sendFile, JSON.stringify(drillEvent('sent')));
    const sent = await cliJson('webhooks', 'send', sendFile);
    const sendTestFile = path.join(work, 'drill-send-test.json');
    await writeFile(sendTestFile, JSON.stringify(drillEvent('send-test')));
    assert.equal((await cliJson('webhooks', 'send-test', sendTestFile)).succeeded, true);
    await cliJson('personal-data', 'reindex');
    assert.equal((await cli('keys', 'reseal')).code, 2);
    await cliJson('retention', 'run');

    // The audit trail, read with the CLI: exactly the drill's changes, each with its actor, target and outcome.
    const trail = await cliJson('audit', 'list', '--since', drillStart, '--limit', '500');
    assert.equal(trail.next_cursor, null);
    type Row = {
      actor: string;
      action: string;
      target: string | null;
      phase: string;
      operation_id: string;
      outcome: string | null;
      outcome_recorded: boolean;
      error: string | null;
      request_id: string | null;
      parameters: Record<string, unknown>;
    };
    const everyRow = trail.results as Row[];
    // Every intent (a call to Temporal, or work outside one transaction) got its outcome, by the same actor.
    for (const intent of everyRow.filter((r) => r.phase === 'intent')) {
      assert.equal(intent.outcome_recorded, true, `${intent.action} ${intent.target}`);
      const outcome = everyRow.find((r) => r.phase === 'outcome' && r.operation_id === intent.operation_id);
      assert.deepEqual(
        [outcome?.actor, outcome?.action, outcome?.target],
        [intent.actor, intent.action, intent.target],
      );
    }
    const rows = everyRow.filter((r) => r.phase === 'outcome');
    // The erasure tries refused with 503 above: each is one failed erasure.request of the eraser, and only that.
    const refusedRows = rows.filter((r) => r.request_id !== null && refusedErasures.includes(r.request_id));
    assert.deepEqual(
      refusedRows.map((r) => [r.actor, r.action, r.outcome]),
      refusedErasures.map(() => ['drill-eraser', 'erasure.request', 'failed']),
    );
    const summary = (r: Pick<Row, 'actor' | 'action' | 'target' | 'outcome'>) =>
      `${r.actor} ${r.action} ${r.target} ${r.outcome}`;
    const byApi = (action: string, target: string | null, outcome = 'succeeded', actor = 'drill-operator') => ({
      actor,
      action,
      target,
      outcome,
    });
    const byCli = (action: string, target: string | null, outcome = 'succeeded') => ({
      actor: me,
      action,
      target,
      outcome,
    });
    const expected = [
      ...Object.values(TOKENS).map(([name]) => byCli('token.create', name)),
      byApi('webhook.retry_now', ids.apiRetried),
      byApi('webhook.cancel', ids.apiCancelled),
      byApi('webhook.redeliver', ids.apiRedelivered),
      byApi('webhooks.redeliver', null),
      byApi('webhook.retry_now', ids.apiRedelivered, 'failed'),
      byCli('webhook.retry_now', ids.cliRetried),
      byCli('webhook.cancel', ids.cliCancelled),
      byCli('webhook.redeliver', ids.cliRedelivered),
      byCli('webhooks.redeliver', null),
      byCli('webhook.cancel', ids.cliRedelivered, 'failed'),
      byApi('partner.pause', queue),
      byApi('partner.resume', queue),
      byApi('partner.limit', queue),
      byCli('partner.pause', queue),
      byCli('partner.resume', queue),
      byCli('partner.limit', queue),
      byApi('ordering.skip', null, 'failed'),
      byApi('ordering.retry', null, 'failed'),
      byCli('ordering.skip', null, 'failed'),
      byCli('ordering.retry', null, 'failed'),
      byApi('erasure.request', apiErasure.body.erasure_id, 'succeeded', 'drill-eraser'),
      ...refusedRows,
      byCli('erasure.request', cliErasure.erasure_id),
      byCli('token.revoke', 'drill-spare'),
      byCli('directory.import', null),
      byCli('app.create', app.app_id),
      byCli('app.scopes', app.app_id),
      byCli('portal.link', app.app_id),
      byCli('app.revoke', app.app_id),
      byCli('webhook.send', sent.webhook_id),
      byCli('webhook.send_test', null),
      // The target is the newest key of SUBJECT_INDEX_KEYS; these processes set none (the development key).
      byCli('personal_data.reindex', null),
      byCli('keys.reseal', null, 'failed'),
      byCli('audit.purge', null),
      byCli('retention.run', queue),
    ];
    assert.deepEqual(rows.map(summary).sort(), expected.map(summary).sort());
    // Newest first; API rows carry their request's X-Request-Id, CLI rows none; failed rows say why.
    assert.deepEqual([...rows.map((r) => r.action)].reverse().slice(0, 5), [
      'token.create',
      'token.create',
      'token.create',
      'token.create',
      'token.create',
    ]);
    assert.deepEqual(
      rows
        .filter((r) => r.actor !== me)
        .map((r) => r.request_id)
        .sort(),
      [...auditedRequestIds].sort(),
    );
    assert.ok(rows.filter((r) => r.actor === me).every((r) => r.request_id === null));
    assert.ok(
      rows.every((r) => (r.outcome === 'failed') === (typeof r.error === 'string' && r.error.length > 0)),
      JSON.stringify(rows),
    );
    const purge = rows.find((r) => r.action === 'audit.purge')!;
    assert.deepEqual([purge.parameters.rows_removed, purge.parameters.anchor_seq], [1, 1]);

    // Derived from the CLI's commands and the OpenAPI document: every audited subcommand and operation was made
    // by the drill, and each of its actions is in the trail with the actor that made it.
    for (const command of commands) {
      const subcommands = Object.keys(command.auditActions);
      for (const [subcommand, actions] of Object.entries(command.auditActions)) {
        if (subcommand !== '')
          assert.ok(
            command.usage.includes(`partner-service ${command.name} ${subcommand}`),
            `${command.name} ${subcommand} is a subcommand`,
          );
        if (!actions.length) continue;
        const ran = cliRuns.some(
          ({ args }) =>
            args[0] === command.name && (subcommand === '' ? !subcommands.includes(args[1]) : args[1] === subcommand),
        );
        assert.ok(ran, `the drill runs partner-service ${command.name} ${subcommand}`);
        for (const action of actions)
          assert.ok(
            rows.some((r) => r.action === action && r.actor === me),
            `${command.name} ${subcommand}: ${action} in the trail`,
          );
      }
    }
    const document = openApiDocument({ API_VERSIONS: ['v1'], SCIM_BEARER_TOKEN: undefined });
    let auditedOperations = 0;
    for (const { method, template, operation } of internalOperations(document)) {
      const actions = operation['x-audit-actions'];
      assert.ok(Array.isArray(actions), `${method} ${template} states x-audit-actions`);
      if (!actions.length) continue;
      auditedOperations += 1;
      const pattern = new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/?]+')}(\\?.*)?$`);
      assert.ok(
        calls.some((c) => c.method === method.toUpperCase() && pattern.test(c.route)),
        `the drill calls ${method.toUpperCase()} ${template}`,
      );
      for (const action of actions)
        assert.ok(
          rows.some((r) => r.action === action && r.actor !== me),
          `${method.toUpperCase()} ${template}: ${action} in the trail`,
        );
    }
    assert.equal(auditedOperations, 10);
    // Every action of the vocabulary is made by some command or operation (the partner API's are drilled in
    // test/partner-api/).
    const declared = new Set([
      ...commands.flatMap((c) => Object.values(c.auditActions).flat()),
      ...[...internalOperations(document), ...partnerOperations(document)].flatMap(
        ({ operation }) => operation['x-audit-actions'] as string[],
      ),
    ]);
    assert.deepEqual([...declared].sort(), [...AUDIT_ACTIONS].sort());

    // The chain verifies, through the CLI and the API.
    const verified = await cli('audit', 'verify');
    assert.equal(verified.code, 0, verified.stdout);
    const apiVerified = await call('reader', 'GET', '/internal/v1/audit/verify');
    assert.deepEqual(apiVerified.body, JSON.parse(verified.stdout));

    // The API's reading of the same trail, with the read-only token, filtered by actor.
    const apiTrail = await call(
      'reader',
      'GET',
      `/internal/v1/audit?since=${encodeURIComponent(drillStart)}&actor=drill-operator&limit=500`,
    );
    assert.equal(apiTrail.status, 200);
    assert.deepEqual(
      apiTrail.body.results
        .filter((r: Row) => r.phase === 'outcome')
        .map(summary)
        .sort(),
      expected
        .filter((e) => e.actor === 'drill-operator')
        .map(summary)
        .sort(),
    );

    // Temporal: the identity of each cancel, retry-now and start names the actor.
    connection = await Connection.connect({ address: `127.0.0.1:${serverPort}` });
    const client = new Client({ connection });
    const histories = new Map<string, HistoryEvent[]>();
    const eventsOf = async (workflowId: string) => {
      if (!histories.has(workflowId))
        histories.set(workflowId, (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? []);
      return histories.get(workflowId)!;
    };
    const identities = async (workflowId: string, type: temporal.api.enums.v1.EventType) =>
      (await eventsOf(workflowId))
        .filter((event) => event.eventType === type)
        .map(
          (event) =>
            event.workflowExecutionCancelRequestedEventAttributes?.identity ??
            event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.meta?.identity ??
            event.workflowExecutionStartedEventAttributes?.identity,
        );
    const actedBy = (actor: string) =>
      new RegExp(`^${actor.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} via partner-service \\d+@`);
    const assertActor = async (
      what: string,
      workflowId: string,
      type: temporal.api.enums.v1.EventType,
      actor: string,
    ) => {
      const found = await identities(workflowId, type);
      assert.equal(found.length, 1, `${what}: ${found.length} events`);
      assert.match(String(found[0]), actedBy(actor), what);
    };
    const redeliveryWorkflowOf = async (originalId: string) => {
      const rows = await db.knex('webhook_events').where({ redelivery_of: originalId }).select('workflow_id');
      assert.equal(rows.length, 1, originalId);
      return rows[0].workflow_id as string;
    };
    await assertActor(
      'API retry-now',
      workflowIds.apiRetried,
      EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
      'drill-operator',
    );
    await assertActor(
      'API cancel',
      workflowIds.apiCancelled,
      EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED,
      'drill-operator',
    );
    await assertActor(
      'API redeliver',
      apiRedelivery.body.workflow_id,
      EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
      'drill-operator',
    );
    await assertActor(
      'API bulk redeliver',
      await redeliveryWorkflowOf(ids.apiCancelled),
      EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
      'drill-operator',
    );
    await assertActor(
      'API erasure',
      erasureWorkflowId(apiErasure.body.erasure_id),
      EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
      'drill-eraser',
    );
    await assertActor(
      'CLI retry-now',
      workflowIds.cliRetried,
      EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
      me,
    );
    await assertActor(
      'CLI cancel',
      workflowIds.cliCancelled,
      EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED,
      me,
    );
    await assertActor('CLI redeliver', cliRedelivery.workflow_id, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, me);
    await assertActor(
      'CLI bulk redeliver',
      await redeliveryWorkflowOf(ids.cliCancelled),
      EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
      me,
    );
    await assertActor(
      'CLI erasure',
      erasureWorkflowId(cliErasure.erasure_id),
      EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
      me,
    );
    // Ingestion is no operator's change: its start carries no token's name.
    const [ingestedBy] = await identities(workflowIds.cliRetried, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED);
    assert.doesNotMatch(String(ingestedBy), /drill-/);

    // Shutdown: both processes stop gracefully.
    assert.deepEqual(await processes.terminateAll(), [0, 0]);

    // No secret anywhere: not in any log line, audit row, response body or workflow history. The only place a
    // secret is printed is the stdout of the command that made it (tokens create, apps create), once.
    const tokenSecrets = Object.values(secrets) as string[];
    const forbidden = [
      ...tokenSecrets,
      ...tokenSecrets.map((secret) => secret.slice(-43)),
      SHARED_TOKEN,
      PARTNER_TOKEN,
      app.app_key as string,
      portalSecret,
    ];
    // The partner did get its token (the drill is not vacuous).
    assert.ok(partner.requests.some((r) => r.headers.authorization === `Bearer ${PARTNER_TOKEN}`));
    const madeSecrets = (args: string[]) =>
      (args[0] === 'tokens' && args[1] === 'create') ||
      (args[0] === 'apps' && args[1] === 'create') ||
      (args[0] === 'portal' && args[1] === 'link');
    for (const secret of [...tokenSecrets, app.app_key as string, portalSecret]) {
      assert.equal(
        cliRuns.filter(({ result }) => result.stdout.includes(secret)).length,
        1,
        'each secret is printed once',
      );
    }
    const auditRows = await db.knex('audit_events').select('*');
    assert.equal(auditRows.filter((r) => r.phase === 'outcome').length, expected.length);
    const places = [
      ...processes
        .outputs()
        .flatMap(({ name, output }) =>
          [...linesOf(output.stdout), ...linesOf(output.stderr)].map((text) => ({ from: name, text })),
        ),
      ...cliRuns.flatMap(({ args, result }) =>
        [...linesOf(result.stderr), ...(madeSecrets(args) ? [] : linesOf(result.stdout))].map((text) => ({
          from: `cli ${args.slice(0, 2).join(' ')}`,
          text,
        })),
      ),
      ...auditRows.map((row) => ({ from: 'audit_events', text: JSON.stringify(row) })),
      ...responses.map((text) => ({ from: 'response', text })),
      ...[...histories].flatMap(([workflowId, events]) =>
        historyTexts({ events }).map((text) => ({ from: `history ${workflowId}`, text })),
      ),
    ];
    // Floors keep the check from passing on a capture that missed something: at trace the worker writes dozens
    // of lines, the API a line per request at least.
    const countFrom = (prefix: string) => places.filter(({ from }) => from.startsWith(prefix)).length;
    assert.ok(countFrom('worker') >= 50, `${countFrom('worker')} worker lines`);
    assert.ok(countFrom('api') >= 10, `${countFrom('api')} api lines`);
    assert.ok(countFrom('response') >= 40, `${countFrom('response')} responses`);
    assert.ok(countFrom('history') >= 100, `${countFrom('history')} history texts`);
    const leaks = places.flatMap(({ from, text }) =>
      forbidden
        .filter((secret) => text.includes(secret))
        .map((secret) => `${from}: ${secret.slice(0, 12)}… in ${text.slice(0, 300)}`),
    );
    assert.deepEqual(leaks, []);
  });
});
