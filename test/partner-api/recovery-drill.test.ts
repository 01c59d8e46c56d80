// A partner's recovery on real servers: the dev server, PostgreSQL, the API and a worker (timers 1000 times shorter,
// so a webhook fails finally in about a second) and a loopback partner the test controls. Ordered webhooks fail
// finally (the partner answers 400, which never trips the breaker), then: the dry run's list is exactly what the
// recovery starts, a cancel stops the rest (none of them is POSTed), per key the redeliveries arrive one at a time in
// sequence order, a second recovery sends only what the first did not deliver, and a single redelivery is 404 for
// another company's webhook.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import { insertCompany } from '../listings/support';
import { eventually } from '../support/eventually';
import { INTERNAL_TOKEN } from '../support/tokens';
import { submitWebhook } from '../support/api';
import { startWebhookStack, type WebhookStack } from '../support/webhook-stack';
import { partnerApp, partnerCall } from './support';

/** A redelivery as the partner received it: its webhook-id, webhook-ordering-key and webhook-sequence. */
type Arrival = Readonly<{ webhookId: string; key: string; sequence: number }>;
const [KEYS, PER_KEY] = [15, 4];

describe('partner recovery drill: dry run, cancel and per-key order on a real worker', function () {
  this.timeout(180_000);
  let stack: WebhookStack;
  let base: string;
  /** The partner's answer; 400 while the originals fail. */
  let status = 400;
  let arrivals: Arrival[] = [];
  const inFlight = new Map<string, number>();
  let overlapped = false;
  let acme: { headers: Record<string, string> };
  let globex: { headers: Record<string, string> };
  const keyOf = new Map<string, string>();
  let since: string;

  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const key = String(req.headers['webhook-ordering-key'] ?? '');
    const answer = status;
    if (answer === 204) {
      arrivals.push({
        webhookId: String(req.headers['webhook-id']),
        key,
        sequence: Number(req.headers['webhook-sequence']),
      });
    }
    // One at a time per key: an answer held a little shows any overlap.
    inFlight.set(key, (inFlight.get(key) ?? 0) + 1);
    if ((inFlight.get(key) ?? 0) > 1) overlapped = true;
    setTimeout(
      () => {
        inFlight.set(key, inFlight.get(key)! - 1);
        res.writeHead(answer).end();
      },
      answer === 204 ? 80 : 5,
    );
  };

  before(async function () {
    stack = await startWebhookStack({
      compressTimers: true,
      partnerHandler: handler,
      env: { PARTNER_RECOVERY_BATCH_SIZE: '1', PARTNER_API_REQUESTS_PER_MINUTE: '100000' },
    });
    base = stack.api.url;
    await insertCompany(stack.db.knex, 'acme');
    await insertCompany(stack.db.knex, 'globex');
    acme = await partnerApp(stack.db.knex, 'acme-app', ['acme']);
    globex = await partnerApp(stack.db.knex, 'globex-app', ['globex']);
    since = new Date(Date.now() - 1000).toISOString();
    const event = (companyId: string, key: string, n: number) => ({
      event_id: `recovery-${randomUUID()}`,
      event_type: 'company',
      action: 'signup',
      ordering_key: key,
      data: {
        company_id: companyId,
        internal_id: n + 1,
        company_name: `${companyId} ${n}`,
        has_config: false,
        dt_created: '2026-11-01 10:00:00',
      },
    });
    // Key after key, so a key's webhooks are neighbours in the recovery's order and would overlap if sent unordered.
    for (let k = 0; k < KEYS; k++) {
      for (let n = 0; n < PER_KEY; n++) {
        const accepted = await submitWebhook(base, INTERNAL_TOKEN, event('acme', `key-${k}`, n));
        keyOf.set(accepted.webhook_id, `key-${k}`);
      }
    }
    await submitWebhook(base, INTERNAL_TOKEN, event('globex', 'globex-key', 0));
    await eventually(
      'every original failed finally',
      async () => (await failedCount()) === KEYS * PER_KEY + 1,
      120_000,
    );
    status = 204;
  });

  after(async function () {
    await stack?.close();
  });

  const failedCount = async () =>
    Number((await stack.db.knex('webhook_events').where({ status: 'failed' }).count({ n: '*' }))[0].n);
  const recoveryOf = (id: string) => partnerCall(base, acme.headers, 'GET', `/recoveries/${id}`);
  const startedOriginals = async (recoveryId: string): Promise<string[]> =>
    (
      await stack.db
        .knex('webhook_events')
        .where({ redelivery_key: `recovery:${recoveryId}` })
        .andWhere('start_reported', true)
        .select('redelivery_of')
    ).map((row: { redelivery_of: string }) => row.redelivery_of);

  /** Per key, the redeliveries' arrivals carry increasing sequence numbers. */
  function assertInSequence(received: readonly Arrival[]) {
    const byKey = new Map<string, number[]>();
    for (const a of received) byKey.set(a.key, [...(byKey.get(a.key) ?? []), a.sequence]);
    for (const [key, sequences] of byKey)
      assert.deepEqual(
        sequences,
        [...sequences].sort((a, b) => a - b),
        `${key} arrived out of order`,
      );
    assert.equal(overlapped, false, 'two POSTs of one key were in flight at once');
  }

  it('dry run equals what starts; a cancel stops the rest; a second recovery sends only the rest, in order', async () => {
    const dry = await partnerCall(base, acme.headers, 'POST', '/recoveries', { since, dry_run: true });
    assert.equal(dry.status, 200, dry.text);
    assert.equal(dry.body.would_start, KEYS * PER_KEY);
    assert.deepEqual(dry.body.skipped, []);
    const planned: string[] = dry.body.webhook_ids;
    assert.deepEqual(new Set(planned), new Set(keyOf.keys()), "the app's own company's webhooks only");

    const started = await partnerCall(base, acme.headers, 'POST', '/recoveries', { since, until: dry.body.until });
    assert.equal(started.status, 202, started.text);
    const id: string = started.body.recovery_id;
    assert.equal(started.headers.location, `${base}/partner/v1/recoveries/${id}`);
    assert.equal(started.body.total, planned.length);
    const busy = await partnerCall(base, acme.headers, 'POST', '/recoveries', { since });
    assert.equal(busy.status, 409, busy.text);
    assert.equal(busy.body.running_recovery_id, id);
    assert.equal((await partnerCall(base, globex.headers, 'GET', `/recoveries/${id}`)).status, 404);

    await eventually('some redeliveries started', async () => (await recoveryOf(id)).body.started >= 5, 60_000);
    const cancel = await partnerCall(base, acme.headers, 'DELETE', `/recoveries/${id}`);
    assert.equal(cancel.status, 200, cancel.text);
    await eventually('the recovery is cancelled', async () => (await recoveryOf(id)).body.state === 'cancelled');
    const progress = (await recoveryOf(id)).body;
    assert.ok(progress.cancelled > 0, `the cancel came too late to stop anything: ${JSON.stringify(progress)}`);
    assert.equal(progress.started + progress.cancelled, planned.length);
    // Batches go in the dry run's order: what started is its first `started` originals, exactly.
    assert.deepEqual((await startedOriginals(id)).sort(), planned.slice(0, progress.started).sort());
    await eventually('the started redeliveries are delivered', async () => {
      const body = (await recoveryOf(id)).body;
      return body.delivered === progress.started;
    });
    await new Promise((resolve) => setTimeout(resolve, 1000));
    assert.deepEqual(new Set(arrivals.map((a) => a.webhookId)), new Set(planned.slice(0, progress.started)));
    assert.equal(arrivals.length, progress.started, 'none of the cancelled ones was POSTed');
    assertInSequence(arrivals);

    // The delivered ones are no longer failed: the second recovery takes exactly the cancelled ones.
    arrivals = [];
    const rest = planned.slice(progress.started);
    const second = await partnerCall(base, acme.headers, 'POST', '/recoveries', { since });
    assert.equal(second.status, 202, second.text);
    assert.equal(second.body.total, rest.length);
    await eventually('the second recovery completed and delivered', async () => {
      const body = (await recoveryOf(second.body.recovery_id)).body;
      return body.state === 'completed' && body.delivered === rest.length;
    });
    assert.deepEqual(new Set(arrivals.map((a) => a.webhookId)), new Set(rest));
    assert.equal(arrivals.length, rest.length);
    assertInSequence(arrivals);
    const actions = await stack.db
      .knex('audit_events')
      .where({ actor: 'app:acme-app', phase: 'outcome', outcome: 'succeeded' })
      .select('action');
    assert.deepEqual(actions.map((row: { action: string }) => row.action).sort(), [
      'recovery.cancel',
      'recovery.start',
      'recovery.start',
    ]);
  });

  it("a single redelivery: 202 for the app's webhook, the same 404 for another company's or an unknown one", async () => {
    const [acmeWebhook] = [...keyOf.keys()];
    const foreign = await partnerCall(base, globex.headers, 'POST', `/webhooks/${acmeWebhook}/redeliver`);
    const unknown = await partnerCall(base, globex.headers, 'POST', `/webhooks/${randomUUID()}/redeliver`);
    assert.deepEqual([foreign.status, foreign.text], [404, '{"detail":"Not found."}']);
    assert.deepEqual([unknown.status, unknown.text], [404, '{"detail":"Not found."}']);
    const globexAudit = await stack.db.knex('audit_events').where({ actor: 'app:globex-app' }).count({ n: '*' });
    assert.equal(Number(globexAudit[0].n), 0, 'a refused id leaves no audit row');

    const res = await partnerCall(base, acme.headers, 'POST', `/webhooks/${acmeWebhook}/redeliver`);
    assert.equal(res.status, 202, res.text);
    const statusUrl = `${base}/partner/v1/webhooks/${res.body.webhook_id}`;
    assert.deepEqual(res.body, { webhook_id: res.body.webhook_id, redelivery_of: acmeWebhook, status_url: statusUrl });
    assert.equal(res.headers.location, statusUrl);
    const [audit] = await stack.db
      .knex('audit_events')
      .where({ actor: 'app:acme-app', action: 'webhook.redeliver', phase: 'outcome' })
      .select('target', 'outcome');
    assert.deepEqual(audit, { target: acmeWebhook, outcome: 'succeeded' });
  });
});
