// The audit trail is append-only and out of any erasure's reach, so an ordering key (`candidate:<id>` names a
// candidate) must never enter it: not as a target or parameter, not quoted in a refusal, not as its lane's digest.
// `ordering skip` and `retry` of an unknown key and of a key whose head is not blocked, through the API and the
// CLI, then plain SQL over every column of every audit row.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import candidateNew from '../fixtures/events/candidate-new.json';
import { startTestApi, type TestApi } from '../support/api';
import { runCli } from '../support/cli';
import { IN_CLEAR } from '../support/at-rest';
import { resetAuditTrail } from '../support/audit-trail';
import { prepareWebhook } from '../../application/ingestion/start-webhook';
import { claimEvent } from '../../store/ingestion/webhook-ingestion';
import { INTERNAL_TOKEN } from '../support/tokens';

const KEY = 'candidate:c-77';

describe('ordering skip and retry never audit the ordering key', function () {
  this.timeout(60_000);
  let test: TestApi;

  before(async () => {
    // No Temporal server (port 43001 of this test's range, nothing listens): a skip of a head that is not blocked asks
    // Temporal whether its run ended, and is refused with a 503; nothing else reaches Temporal.
    test = await startTestApi({ INTERNAL_API_TOKEN: INTERNAL_TOKEN, TEMPORAL_ADDRESS: '127.0.0.1:43001' });
    await resetAuditTrail(test.db.knex);
  });
  after(() => test?.close());

  const operate = async (path: 'skip' | 'retry', key: string) => {
    const response = await fetch(`${test.api.url}/internal/v1/ordering/${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ key }),
    });
    return { status: response.status, body: await response.json() };
  };
  const cli = (decision: 'skip' | 'retry', key: string) =>
    runCli(['ordering', decision, key], {
      PATH: process.env.PATH,
      DATABASE_URL: test.db.url,
      TEMPORAL_ADDRESS: '127.0.0.1:43001',
    });
  /** The audit rows whose text, every column of them cast to text, holds `needle` (any case). */
  const rowsHolding = async (needle: string) =>
    (
      await test.db.knex.raw(`SELECT a::text AS row FROM audit_events a WHERE strpos(lower(a::text), lower(?)) > 0`, [
        needle,
      ])
    ).rows as Array<{ row: string }>;
  const trail = async () =>
    (await test.db
      .knex('audit_events')
      .orderBy('seq')
      .select('action', 'phase', 'target', 'parameters', 'outcome', 'error')) as Array<Record<string, unknown>>;

  it('audits the refusal of an unknown key without the key, by the API and the CLI', async () => {
    assert.deepEqual(await operate('skip', KEY), { status: 404, body: { detail: 'Not found.' } });
    assert.deepEqual(await operate('retry', KEY), { status: 404, body: { detail: 'Not found.' } });
    const skipped = await cli('skip', KEY);
    assert.deepEqual(
      [skipped.code, skipped.stderr.trim()],
      [1, 'No lane for this ordering key: none of its webhooks is recorded, or its key was erased.'],
    );
    assert.equal((await cli('retry', KEY)).code, 1);

    const refused =
      'UnknownOrderingKeyError: No lane for this ordering key: none of its webhooks is recorded, or its key was erased.';
    const expected = (action: string) => [
      { action, phase: 'intent', target: null, parameters: {}, outcome: null, error: null },
      { action, phase: 'outcome', target: null, parameters: {}, outcome: 'failed', error: refused },
    ];
    assert.deepEqual(await trail(), [
      ...expected('ordering.skip'),
      ...expected('ordering.retry'),
      ...expected('ordering.skip'),
      ...expected('ordering.retry'),
    ]);
    assert.deepEqual(await rowsHolding('c-77'), []);
  });

  it('audits the refusal of a key whose head is not blocked with its webhook id; no row holds the key or its digest', async () => {
    await resetAuditTrail(test.db.knex);
    const webhook = prepareWebhook({ ...candidateNew, event_id: `candidate-new-${randomUUID()}` });
    assert.equal(webhook.input.orderingKey, KEY);
    assert.equal(
      (
        await claimEvent(test.db.knex, IN_CLEAR, {
          ...webhook,
          event: webhook.input.event,
          runId: null,
          isTest: false,
          orderingKey: KEY,
        })
      ).kind,
      'start',
    );
    const [lane] = (await test.db.knex.raw(`SELECT encode(key_digest, 'hex') AS digest, key_text FROM ordering_lanes`))
      .rows as Array<{ digest: string; key_text: string }>;
    assert.equal(lane.key_text, KEY, 'the lane exists, keyed to the candidate');

    // A skip asks Temporal whether a head that is not blocked ended without settling: unreachable here, a 503.
    const skipped = await operate('skip', KEY);
    assert.equal(skipped.status, 503);
    assert.equal((skipped.body as { reason: string }).reason, 'temporal_unreachable');
    const retried = await cli('retry', KEY);
    assert.deepEqual(
      [retried.code, retried.stderr.trim()],
      [1, `The key is not blocked: its head, webhook ${webhook.webhookId}, has not failed finally.`],
    );

    const rows = await trail();
    assert.deepEqual(
      rows.map((r) => [r.action, r.phase, r.target, r.outcome]),
      [
        ['ordering.skip', 'intent', webhook.webhookId, null],
        ['ordering.skip', 'outcome', webhook.webhookId, 'failed'],
        ['ordering.retry', 'intent', webhook.webhookId, null],
        ['ordering.retry', 'outcome', webhook.webhookId, 'failed'],
      ],
    );
    for (const trace of ['c-77', lane.digest, Buffer.from(lane.digest, 'hex').toString('base64')])
      assert.deepEqual(await rowsHolding(trace), [], trace);
  });
});
