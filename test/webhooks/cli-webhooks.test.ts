import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import candidateNew from '../fixtures/events/candidate-new.json';
import { runSourceCli } from '../support/cli';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { answer, closedPort, startPartnerServer, type PartnerServer } from '../support/partner-server';
import { PARTNER_TOKEN } from '../support/tokens';

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'events', 'candidate-new.json');

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

describe('partner-service webhooks', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let partner: PartnerServer;
  let tmp: string;

  const cli = (args: string[], env: Record<string, string> = {}): Promise<CliResult> =>
    runSourceCli(['webhooks', ...args], {
      DATABASE_URL: db.url,
      PARTNER_ENDPOINT: partner.url,
      PARTNER_ACCESS_TOKEN: PARTNER_TOKEN,
      PARTNER_TIMEOUT_MS: '2000',
      LOG_LEVEL: 'warn',
      ...env,
    });

  before(async () => {
    db = await createTestDatabase();
    partner = await startPartnerServer();
    tmp = await mkdtemp(path.join(os.tmpdir(), 'pis-webhooks-cli-'));
  });
  after(async () => {
    await partner.close();
    await db.drop();
    await rm(tmp, { recursive: true, force: true });
  });
  beforeEach(async () => {
    partner.requests.length = 0;
    await db.knex('webhook_events').del();
  });

  it('send-test delivers once, records the attempt as a test, prints the outcome and exits 0 on 2XX', async () => {
    partner.handler = answer(200, 'thanks');
    const result = await cli(['send-test', FIXTURE]);
    assert.equal(result.code, 0, result.stderr);
    const report = JSON.parse(result.stdout.trim());
    assert.match(report.event_id, /^test-[0-9a-f-]{36}$/);
    assert.deepEqual(
      {
        ...report,
        webhook_id: undefined,
        event_id: undefined,
        scheduled_at: undefined,
        started_at: undefined,
        duration_ms: undefined,
      },
      {
        webhook_id: undefined,
        event_id: undefined,
        is_test: true,
        attempt: 1,
        scheduled_at: undefined,
        started_at: undefined,
        duration_ms: undefined,
        http_status: 200,
        error_class: null,
        error_message: null,
        response_body: 'thanks',
        succeeded: true,
      },
    );
    assert.equal(partner.requests.length, 1);
    assert.equal(partner.requests[0].headers.authorization, `Bearer ${PARTNER_TOKEN}`);
    assert.equal(partner.requests[0].headers['webhook-id'], report.webhook_id);
    const { event_id: _id, ...envelope } = candidateNew;
    assert.deepEqual(JSON.parse(partner.requests[0].body), envelope);

    const row = await db.knex('webhook_events').where({ id: report.webhook_id }).first();
    assert.deepEqual(
      [row.event_id, row.status, row.is_test, row.workflow_id, row.run_id],
      [report.event_id, 'delivered', true, null, null],
    );
    assert.ok(row.finished_at instanceof Date);
    const attempts = await db.knex('webhook_attempts').where({ webhook_id: report.webhook_id });
    assert.deepEqual(
      attempts.map((a) => [a.attempt, a.http_status, a.succeeded, a.is_test, a.response_body]),
      [[1, 200, true, true, 'thanks']],
    );
    assert.ok(!result.stdout.includes(PARTNER_TOKEN) && !result.stderr.includes(PARTNER_TOKEN));
  });

  it('send-test exits 1 on a failure and records it', async () => {
    partner.handler = answer(503, 'down for maintenance');
    const result = await cli(['send-test', FIXTURE]);
    assert.equal(result.code, 1);
    const report = JSON.parse(result.stdout.trim());
    assert.equal(report.http_status, 503);
    assert.equal(report.succeeded, false);
    const row = await db.knex('webhook_events').where({ id: report.webhook_id }).first();
    assert.equal(row.status, 'failed');
  });

  it('rejects an invalid event with one line per JSON path, sends and writes nothing', async () => {
    const file = path.join(tmp, 'bad.json');
    await writeFile(
      file,
      JSON.stringify({
        event_type: 'company',
        action: 'signup',
        data: { company_id: 'acme', has_config: 'yes', dt_created: '2025-03-01T10:00:00Z' },
      }),
    );
    const result = await cli(['send-test', file]);
    assert.equal(result.code, 1);
    assert.equal(
      result.stderr,
      [
        'Invalid webhook event; nothing was sent.',
        'data.company_name: required',
        'data.has_config: Invalid input: expected boolean, received string',
        'data.dt_created: must be a datetime shaped YYYY-MM-DD HH:MM:SS',
        '',
      ].join('\n'),
    );
    assert.equal(partner.requests.length, 0);
    assert.equal(Number((await db.knex('webhook_events').count({ n: '*' }))[0].n), 0);
  });

  it('send exits 1 with a clear message when Temporal is unreachable, and accepts nothing', async () => {
    const port = await closedPort();
    const result = await cli(['send', FIXTURE], { TEMPORAL_ADDRESS: `127.0.0.1:${port}` });
    assert.equal(result.code, 1);
    // stderr also carries the command's log lines; the message stands on its own line.
    assert.match(
      result.stderr,
      new RegExp(
        `^Webhook not accepted: Temporal is unavailable: cannot connect to 127\\.0\\.0\\.1:${port} \\(nothing answered there: is the Temporal server running, and is TEMPORAL_ADDRESS right\\?\\)$`,
        'm',
      ),
    );
    assert.equal(result.stdout, '');
    assert.equal(Number((await db.knex('webhook_events').count({ n: '*' }))[0].n), 0);
  });
});
