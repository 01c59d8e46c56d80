// When the CLI turns tracing on, and what it does with a bad OTEL_* value: through the real entry point, with
// the one-shot `webhooks send-test`, whose spans must leave before the process exits.
import assert from 'node:assert/strict';
import path from 'node:path';
import { runCli } from '../support/cli';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver';
import { startPartnerServer, type PartnerServer } from '../support/partner-server';
import { PARTNER_TOKEN } from '../support/tokens';

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'events', 'candidate-new.json');
const CLIENT = 3;

describe('tracing set-up of the CLI (OTEL_* variables)', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let partner: PartnerServer;
  let receiver: OtlpReceiver;

  before(async () => {
    [db, partner, receiver] = await Promise.all([createTestDatabase(), startPartnerServer(), startOtlpReceiver()]);
  });
  after(async () => {
    await Promise.all([partner?.close(), receiver?.close(), db?.drop()]);
  });
  beforeEach(() => {
    partner.requests.length = 0;
    receiver.spans.length = 0;
  });

  const sendTest = (otel: Record<string, string>) =>
    runCli(['webhooks', 'send-test', FIXTURE], {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: db.url,
      PARTNER_ENDPOINT: partner.url,
      PARTNER_ACCESS_TOKEN: PARTNER_TOKEN,
      LOG_LEVEL: 'warn',
      ...otel,
    });

  it('with an OTLP endpoint: the POST is a span, sent before the command exits, and the partner gets its traceparent', async () => {
    const result = await sendTest({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    });
    assert.equal(result.code, 0, result.stderr);
    // No request around it: the POST is the root, and no SQL is traced outside a trace.
    assert.deepEqual(
      receiver.spans.map((s) => [s.service, s.name, s.kind, s.parentSpanId]),
      [['partner-integration-service', 'POST', CLIENT, '']],
    );
    const [post] = receiver.spans;
    assert.deepEqual(
      partner.requests.map((r) => r.headers.traceparent),
      [`00-${post.traceId}-${post.spanId}-01`],
    );
  });

  for (const [what, otel] of [
    ['with no OTEL_* variable', {}],
    ['with OTEL_SDK_DISABLED=true', { OTEL_EXPORTER_OTLP_ENDPOINT: 'RECEIVER', OTEL_SDK_DISABLED: 'true' }],
    ['with OTEL_TRACES_EXPORTER=none', { OTEL_EXPORTER_OTLP_ENDPOINT: 'RECEIVER', OTEL_TRACES_EXPORTER: 'none' }],
    ['with only OTEL_SERVICE_NAME', { OTEL_SERVICE_NAME: 'named-but-not-exported' }],
  ] as const) {
    it(`is off ${what}: no span, no traceparent`, async () => {
      const env = Object.fromEntries(Object.entries(otel).map(([k, v]) => [k, v === 'RECEIVER' ? receiver.url : v]));
      const result = await sendTest(env);
      assert.equal(result.code, 0, result.stderr);
      assert.equal(partner.requests.length, 1);
      assert.equal(partner.requests[0].headers.traceparent, undefined);
      assert.deepEqual(receiver.spans, []);
    });
  }

  it('stops with one line for an unknown exporter or protocol', async () => {
    const exporter = await sendTest({ OTEL_TRACES_EXPORTER: 'zipkin' });
    assert.deepEqual(
      [exporter.code, exporter.stderr],
      [2, 'Invalid configuration: OTEL_TRACES_EXPORTER must be otlp, console or none (got "zipkin")\n'],
    );
    const protocol = await sendTest({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/xml',
    });
    assert.deepEqual(
      [protocol.code, protocol.stderr],
      [
        2,
        'Invalid configuration: OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf, http/json or grpc (got "http/xml")\n',
      ],
    );
    assert.equal(partner.requests.length, 0);
  });
});
