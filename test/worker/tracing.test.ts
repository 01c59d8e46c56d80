// One trace per webhook, end to end: `partner-service api` and `partner-service worker` run as real processes
// (tracing is set up at process start) against a dev server, PostgreSQL and a loopback partner, and export
// OTLP/JSON to a receiver in this process.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import type { ChildProcess } from 'node:child_process';
import { Client, Connection } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { findFreePort } from '../../lib/ports';
import type { DevServer } from '../../temporal/dev-server';
import { webhookStatusQuery } from '../../workflows/webhooks/messages';
import type { DeliverySummary } from '../../workflows/types';
import candidateNew from '../fixtures/events/candidate-new.json';
import { startCli, waitForExit } from '../support/cli';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { eventually } from '../support/eventually';
import { startTestDevServer, tempDir, testWorkflowBundle } from '../support/temporal';
import { workerTracing } from '../../worker/tracing';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver';
import { startPartnerServer, type PartnerServer } from '../support/partner-server';
import { submitWebhook } from '../support/api';
import { INTERNAL_TOKEN, PARTNER_TOKEN } from '../support/tokens';

const API_SERVICE = 'partner-integration-service';
const WORKER_SERVICE = 'partner-integration-worker';
/** OTLP's SpanKind numbers. */
const SERVER = 2;
const CLIENT = 3;

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

describe('tracing: one trace per webhook (api and worker processes, OTLP/JSON)', function () {
  this.timeout(120_000);
  let server: DevServer;
  let db: TestDatabase;
  let partner: PartnerServer;
  let receiver: OtlpReceiver;
  let connection: Connection;
  let client: Client;
  let cwd: string;
  let apiUrl: string;
  const children: ChildProcess[] = [];
  const outputs: { stdout: string; stderr: string }[] = [];
  /** How the partner answers its nth request (1-based). */
  let partnerStatus: (n: number) => number = () => 200;

  before(async () => {
    [server, db, partner, receiver, cwd] = await Promise.all([
      startTestDevServer(),
      createTestDatabase(),
      startPartnerServer((_req, res) => {
        res.writeHead(partnerStatus(partner.requests.length));
        res.end('ok');
      }),
      startOtlpReceiver(),
      tempDir('tracing'),
    ]);
    connection = await Connection.connect({ address: server.address });
    client = new Client({ connection });
    const port = await findFreePort();
    apiUrl = `http://127.0.0.1:${port}`;
    const env = {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: db.url,
      DATA_DIR: cwd,
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_TASK_QUEUE: `tracing-${randomUUID()}`,
      PARTNER_ENDPOINT: partner.url,
      PARTNER_ACCESS_TOKEN: PARTNER_TOKEN,
      PARTNER_TIMEOUT_MS: '5000',
      INTERNAL_API_TOKEN: INTERNAL_TOKEN,
      HOST: '127.0.0.1',
      PORT: String(port),
      LOG_LEVEL: 'info',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      // Spans leave within 100 ms instead of 5 s.
      OTEL_BSP_SCHEDULE_DELAY: '100',
    };
    const api = startCli(['api'], env, cwd, /"msg":"API listening"/);
    const worker = startCli(
      ['worker'],
      { ...env, OTEL_SERVICE_NAME: WORKER_SERVICE, WORKER_HTTP_PORT: String(await findFreePort()) },
      cwd,
      /"msg":"webhook worker polling"/,
    );
    children.push(api.child, worker.child);
    outputs.push(api.output, worker.output);
    await Promise.all([api.started, worker.started]);
  });

  after(async () => {
    for (const child of children) child.kill('SIGTERM');
    await Promise.all(children.map(waitForExit));
    await connection?.close();
    await Promise.all([partner?.close(), receiver?.close(), db?.drop(), server?.stop()]);
    await rm(cwd, { recursive: true, force: true });
  });

  beforeEach(() => {
    partner.requests.length = 0;
  });

  const ingest = async (traceparent: string, eventId: string) => {
    return submitWebhook(apiUrl, INTERNAL_TOKEN, { ...candidateNew, event_id: eventId }, { headers: { traceparent } });
  };

  /**
   * The spans of `traceId` once their tree under `rootParentSpanId` renders as `expected`, or after 20 s (then
   * assertTree says what differs). Each process exports on its own schedule, so a count of spans can be reached
   * by one process's spans before the other's arrive.
   */
  const traceOf = async (traceId: string, rootParentSpanId: string, expected: string[]) => {
    const spans = () => receiver.spans.filter((s) => s.traceId === traceId);
    const rendered = () => JSON.stringify(render(spans(), rootParentSpanId));
    await eventually(
      `the span tree of trace ${traceId}`,
      async () => rendered() === JSON.stringify(expected),
      20_000,
    ).catch(() => undefined);
    assertTree(spans(), rootParentSpanId, expected);
    return spans();
  };

  const retryNow = (webhookId: string) =>
    fetch(`${apiUrl}/internal/v1/webhooks/${webhookId}/retry-now`, {
      method: 'POST',
      headers: { authorization: `Bearer ${INTERNAL_TOKEN}` },
    });

  it("traces a first-try delivery from the caller's traceparent to the partner POST, in one trace", async () => {
    const traceId = hex(16);
    const callerSpanId = hex(8);
    partnerStatus = () => 200;
    const accepted = await ingest(`00-${traceId}-${callerSpanId}-01`, `tracing-${randomUUID()}`);
    assert.equal(
      ((await client.workflow.getHandle(accepted.workflow_id).result()) as DeliverySummary).status,
      'delivered',
    );

    const expected = [
      'api: POST /internal/v1/webhooks',
      '  api: pg.query:claim-ordered-event',
      '  api: StartWorkflow:deliverWebhook',
      '    worker: RunWorkflow:deliverWebhook',
      '      worker: StartActivity:deliverAttempt',
      '        worker: RunActivity:deliverAttempt',
      ...attemptSql('POST 200', 'record-attempt-and-finish').map((line) => `          ${line}`),
      '  api: pg.query:report-start',
    ];
    const spans = await traceOf(traceId, callerSpanId, expected);
    const [post] = spans.filter((s) => s.name === 'POST');
    assert.equal(post.kind, CLIENT);
    assert.deepEqual(post.attributes, {
      'http.request.method': 'POST',
      'server.address': '127.0.0.1',
      'server.port': partner.port,
      'http.response.status_code': 200,
    });
    assert.deepEqual(
      partner.requests.map((r) => r.headers.traceparent),
      [`00-${traceId}-${post.spanId}-01`],
    );
    const [request] = spans.filter((s) => s.parentSpanId === callerSpanId);
    assert.equal(request.kind, SERVER);
    assert.deepEqual(request.attributes, {
      'http.request.method': 'POST',
      'http.route': '/internal/v1/webhooks',
      'http.response.status_code': 202,
    });
  });

  it('traces a delivery retried once (retry-now cutting the 10 s timer short) in the same trace, and its history replays', async () => {
    const traceId = hex(16);
    const callerSpanId = hex(8);
    partnerStatus = (n) => (n === 1 ? 503 : 200);
    const accepted = await ingest(`00-${traceId}-${callerSpanId}-01`, `tracing-${randomUUID()}`);
    const handle = client.workflow.getHandle(accepted.workflow_id);
    // This client is not traced: its queries start no span in the delivery's trace.
    await eventually('the waiting state', async () => (await handle.query(webhookStatusQuery)).state === 'waiting');
    // The operator's request carries no traceparent: it starts a trace of its own.
    assert.equal((await retryNow(accepted.webhook_id)).status, 202);
    assert.equal(((await handle.result()) as DeliverySummary).status, 'delivered');

    // The update's validator, its handler and the next attempt's start share one workflow task, so one
    // workflow time: they are in the order they ended.
    const expected = [
      'api: POST /internal/v1/webhooks',
      '  api: pg.query:claim-ordered-event',
      '  api: StartWorkflow:deliverWebhook',
      '    worker: RunWorkflow:deliverWebhook',
      '      worker: StartActivity:deliverAttempt',
      '        worker: RunActivity:deliverAttempt',
      ...attemptSql('POST 503', 'record-attempt').map((line) => `          ${line}`),
      '      worker: ValidateUpdate:retryNow',
      '      worker: HandleUpdate:retryNow',
      '      worker: StartActivity:deliverAttempt',
      '        worker: RunActivity:deliverAttempt',
      ...attemptSql('POST 200', 'record-attempt-and-finish', 'later').map((line) => `          ${line}`),
      '  api: pg.query:report-start',
    ];
    const spans = await traceOf(traceId, callerSpanId, expected);
    const posts = spans.filter((s) => s.name === 'POST').sort((a, b) => (a.startTime < b.startTime ? -1 : 1));
    assert.deepEqual(
      partner.requests.map((r) => r.headers.traceparent),
      posts.map((p) => `00-${traceId}-${p.spanId}-01`),
    );
    assert.deepEqual(
      spans
        .filter((s) => s.name.startsWith('RunActivity'))
        .map((s) => s.attributes.temporalActivityId)
        .sort(),
      ['1', '2'],
    );

    // The operator's request: its own trace, to which the update's spans in the delivery's trace link.
    const operatorRequests = () =>
      receiver.spans.filter((s) => s.name === 'POST /internal/v1/webhooks/:webhook_id/retry-now');
    // The API exports on its own schedule: its span may come after the delivery's last ones.
    await eventually("the operator's request span", async () => operatorRequests().length > 0, 20_000);
    const [operatorRequest] = operatorRequests();
    assert.equal(operatorRequest.parentSpanId, '');
    const operatorTrace = await traceOf(operatorRequest.traceId, '', [
      'api: POST /internal/v1/webhooks/:webhook_id/retry-now',
      // The audit trail's intent, committed before the update, and its outcome once the update's is known.
      '  api: pg.query:insert-audit-event',
      '  api: pg.query:find-operable-webhook',
      '  api: StartWorkflowUpdate:retryNow',
      '  api: pg.query:insert-audit-event',
    ]);
    const [startUpdate] = operatorTrace.filter((s) => s.name === 'StartWorkflowUpdate:retryNow');
    for (const name of ['ValidateUpdate:retryNow', 'HandleUpdate:retryNow']) {
      const [span] = spans.filter((s) => s.name === name);
      assert.deepEqual(span.links, [{ traceId: operatorRequest.traceId, spanId: startUpdate.spanId }], name);
    }

    // The traced history replays on today's bundle (interceptors included), with the service's worker sinks.
    const code = await testWorkflowBundle();
    await Worker.runReplayHistory(
      { workflowBundle: { code }, sinks: workerTracing().sinks },
      await handle.fetchHistory(),
      accepted.workflow_id,
    );
  });

  it('records no secret and no payload in any span, and every span of both processes has its service name', () => {
    const exported = receiver.bodies.join('\n');
    for (const secret of [
      PARTNER_TOKEN,
      INTERNAL_TOKEN,
      'Bearer',
      candidateNew.data.candidate.email,
      candidateNew.data.candidate.message,
    ]) {
      assert.equal(exported.includes(secret), false, `an export contains ${secret}`);
    }
    assert.deepEqual([...new Set(receiver.spans.map((s) => s.service))].sort(), [API_SERVICE, WORKER_SERVICE]);
    // pg statements carry bind parameters, never values.
    for (const span of receiver.spans.filter((s) => s.name.startsWith('pg.'))) {
      assert.equal(span.attributes['db.name'], new URL(db.url).pathname.slice(1));
      assert.doesNotMatch(String(span.attributes['db.statement']), /candidate|ada@/);
    }
  });
});

/**
 * The SQL and the POST of one attempt's local activity: claim, POST, then the record in one statement (a
 * data-modifying CTE that writes the attempt and, when the attempt ends the delivery, the final status).
 */
function attemptSql(
  post: string,
  record: 'record-attempt' | 'record-attempt-and-finish',
  attempt: 'first' | 'later' = 'first',
): string[] {
  // Ordered by entity (the default): the first attempt asks its key's turn, and the last settles its place.
  const turn = attempt === 'first' ? ['worker: pg.query:take-turn'] : [];
  const settle = record === 'record-attempt-and-finish' ? ['worker: pg.query:settle-place'] : [];
  return [...turn, 'worker: pg.query:claim-attempt', `worker: ${post}`, `worker: pg.query:${record}`, ...settle];
}

/**
 * The tree under `parentSpanId`, one indented line per span. Siblings are in start order; start times are in
 * whole milliseconds, so ties keep the order the spans arrived in, which is the order they ended in. A new
 * pool connection (pg.connect) depends on the pool's state, not on the delivery, so it is left out; so are a
 * process's cached looks at the deployment's subject index keys, keyed fact and live signing secrets
 * (store/personal-data/subject-index-keys.ts, store/personal-data/at-rest-settings.ts,
 * activities/partner/signing-keys.ts), which a request makes only when its process's last look has expired.
 */
const CACHE_LOOKUPS = new Set(['read-subject-index-keys', 'read-keyed-fact', 'read-live-signing-secrets']);

function render(spans: readonly ReceivedSpan[], parentSpanId: string, depth = 0): string[] {
  return spans
    .filter(
      (s) =>
        s.parentSpanId === parentSpanId &&
        s.name !== 'pg.connect' &&
        !CACHE_LOOKUPS.has(String(s.attributes['db.postgresql.plan'])),
    )
    .sort((a, b) => (a.startTime === b.startTime ? 0 : a.startTime < b.startTime ? -1 : 1))
    .flatMap((s) => [`${'  '.repeat(depth)}${label(s)}`, ...render(spans, s.spanId, depth + 1)]);
}

/** `api:` or `worker:` by service name; a pg span by its statement's name, or else its verb and table, the POST with its status. */
function label(span: ReceivedSpan): string {
  const where = span.service === API_SERVICE ? 'api' : span.service === WORKER_SERVICE ? 'worker' : span.service;
  let name = span.name;
  if (name.startsWith('pg.query:') && span.attributes['db.postgresql.plan']) {
    // A prepared statement (db/sql's `prepared`) is named by its name.
    name = `pg.query:${span.attributes['db.postgresql.plan']}`;
  } else if (name.startsWith('pg.query:')) {
    // The other statements of these traces are knex's builder's, which quotes the table.
    const table = /(?:into|update|from)\s+"(\w+)"/i.exec(String(span.attributes['db.statement']))?.[1];
    name = `${name.replace(` ${span.attributes['db.name']}`, '')}${table ? ` ${table}` : ''}`;
  } else if (name === 'POST') {
    name = `POST ${span.attributes['http.response.status_code']}`;
  }
  return `${where}: ${name}`;
}

/** The rendered tree equals `expected`; on failure the message lists every span with its times. */
function assertTree(spans: readonly ReceivedSpan[], rootParentSpanId: string, expected: string[]): void {
  const actual = render(spans, rootParentSpanId);
  if (JSON.stringify(actual) !== JSON.stringify(expected)) {
    assert.fail(`span tree:\n${actual.join('\n')}\nexpected:\n${expected.join('\n')}\nspans:\n${listSpans(spans)}`);
  }
}

function listSpans(spans: readonly ReceivedSpan[]): string {
  return spans
    .map(
      (s) =>
        `${s.startTime} ${s.traceId.slice(0, 6)} ${s.spanId} <- ${s.parentSpanId || '-'} [${s.service}] ${s.name} ${String(s.attributes['db.statement'] ?? '').slice(0, 60)}`,
    )
    .join('\n');
}
