// An operator's webhook operations on a real dev server: the delivery log, the status URL's live state,
// retry-now, cancel, redeliver one and redeliver in bulk. A loopback partner answers by webhook-id header.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Client } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { startApiServer, type ApiServer } from '../../api/server';
import { loadConfig, type Config } from '../../lib/config';
import { createLogger } from '../../lib/logger';
import { envelopeBody, toEnvelope } from '../../events/envelope';
import type { DevServer } from '../../temporal/dev-server';
import { WEBHOOK_STATUS } from '../../temporal/search-attributes';
import { createTemporalGateway } from '../../temporal/gateway';
import { webhookIds } from '../../application/ingestion/ids';
import { prepareWebhook } from '../../application/ingestion/start-webhook';
import { redeliverWebhook } from '../../application/webhooks/webhook-operations';
import { webhookStatusQuery } from '../../workflows/webhooks/messages';
import candidateNew from '../fixtures/events/candidate-new.json';
import type { TestDatabase } from '../support/database';
import { startWebhookStack, type WebhookStack } from '../support/webhook-stack';
import { eventually } from '../support/eventually';
import { occurrencesIn } from '../support/history';
import { documentedAnswers, openApi31Validator, type Doc } from '../support/openapi';
import { testWorkflowBundle } from '../support/temporal';
import { closedPort, type PartnerServer } from '../support/partner-server';
import { IN_CLEAR } from '../support/at-rest';
import { OPERATOR } from '../support/operator';
import { ExpiredLinksError } from '../../lib/errors';
import { INTERNAL_TOKEN } from '../support/tokens';
import { internalCall } from '../support/api';

const run = promisify(execFile);
const ROOT = path.join(__dirname, '..', '..');
const { EventType } = temporal.api.enums.v1;

describe('webhook operations on the Temporal dev server', function () {
  this.timeout(120_000);
  let stack: WebhookStack;
  let server: DevServer;
  let db: TestDatabase;
  let partner: PartnerServer;
  let config: Config;
  let api: ApiServer;
  let client: Client;
  /** Partner answers by webhook-id; unknown ids get 204. */
  const answers = new Map<string, number>();
  const logger = createLogger('silent');

  before(async () => {
    stack = await startWebhookStack({
      env: { INTERNAL_API_TOKEN: INTERNAL_TOKEN, PARTNER_MAX_PER_SECOND: '1000', PARTNER_MAX_CONCURRENCY: '50' },
      partnerHandler: (req, res) => res.writeHead(answers.get(String(req.headers['webhook-id'])) ?? 204).end(),
    });
    ({ server, db, partner, config, api, client } = stack);
  });

  after(() => stack?.close());

  beforeEach(() => {
    partner.requests.length = 0;
  });

  const call = (method: 'GET' | 'POST', path: string, body?: unknown) =>
    callAt('/internal/v1/webhooks', method, path, body);
  const callAt = (prefix: string, method: 'GET' | 'POST', path: string, body?: unknown) =>
    internalCall(`${api.url}${prefix}${path}`, INTERNAL_TOKEN, method, body);
  const candidate = (companyId = 'acme') => {
    const event = structuredClone(candidateNew);
    event.event_id = `ops-${randomUUID()}`;
    event.data.company.id = companyId;
    // A candidate of its own: per-entity ordering would queue one candidate's webhooks behind its waiting one.
    event.data.candidate.id = `c-${randomUUID()}`;
    return event;
  };
  const requestsFor = (webhookId: string) => partner.requests.filter((r) => r.headers['webhook-id'] === webhookId);
  /** A delivery whose first attempt failed: it waits 10 s for attempt 2. */
  const waitingDelivery = async () => {
    const event = candidate();
    const { webhookId } = prepareWebhook(event);
    answers.set(webhookId, 500);
    const accepted = await call('POST', '', event);
    assert.equal(accepted.status, 202);
    const handle = client.workflow.getHandle(accepted.body.workflow_id);
    await eventually('the waiting state', async () => (await handle.query(webhookStatusQuery)).state === 'waiting');
    await eventually(
      'the first record',
      async () => (await db.knex('webhook_attempts').where({ webhook_id: webhookId })).length === 1,
    );
    return { event, webhookId, handle, accepted: accepted.body };
  };
  const delivered = async () => {
    const event = candidate();
    const accepted = await call('POST', '', event);
    await client.workflow.getHandle(accepted.body.workflow_id).result();
    return { event, webhookId: accepted.body.webhook_id as string, workflowId: accepted.body.workflow_id as string };
  };
  const statusAttribute = async (workflowId: string) =>
    (await client.workflow.getHandle(workflowId).describe()).typedSearchAttributes.get(WEBHOOK_STATUS);

  describe('retry-now', () => {
    it('cuts the wait short: 202, attempt 2 at once, recorded as manual; the history replays', async () => {
      const { webhookId, handle, accepted } = await waitingDelivery();
      const waiting = await call('GET', `/${webhookId}`);
      assert.deepEqual(waiting.body.live, {
        source: 'temporal',
        state: 'waiting',
        next_attempt_at: (await handle.query(webhookStatusQuery)).nextAttemptAt,
      });
      answers.set(webhookId, 200);
      const pushedAt = Date.now();
      const response = await call('POST', `/${webhookId}/retry-now`);
      assert.equal(response.status, 202);
      assert.deepEqual(response.body, { webhook_id: webhookId, attempt: 2, status_url: accepted.status_url });
      await handle.result();
      assert.ok(Date.now() - pushedAt < 8000, 'attempt 2 did not wait for its 10 s timer');
      assert.equal(requestsFor(webhookId).length, 2);
      const attempts = await db.knex('webhook_attempts').where({ webhook_id: webhookId }).orderBy('attempt');
      assert.deepEqual(
        attempts.map((a) => [a.attempt, a.trigger, a.http_status]),
        [
          [1, 'schedule', 500],
          [2, 'manual', 200],
        ],
      );
      assert.equal((await db.knex('webhook_events').where({ id: webhookId }).first()).status, 'delivered');
      await eventually(
        'WebhookStatus delivered',
        async () => (await statusAttribute(accepted.workflow_id)) === 'delivered',
      );

      const history = await handle.fetchHistory();
      const types = history.events!.map((e) => e.eventType);
      assert.equal(
        types.filter((type) => type === EventType.EVENT_TYPE_TIMER_CANCELED).length,
        1,
        'the timer was cancelled',
      );
      assert.equal(types.filter((type) => type === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED).length, 1);
      // Only a retry-now update cancels the timer, so no earlier history can take this path: it needs no patch.
      assert.equal(
        types.filter((type) => type === EventType.EVENT_TYPE_MARKER_RECORDED).length,
        2,
        'the two attempts, and no patch marker',
      );
      await Worker.runReplayHistory(
        { workflowBundle: { code: await testWorkflowBundle() } },
        history,
        accepted.workflow_id,
      );
    });

    it('answers 409 for a delivery that is not waiting, 404 for an unknown one, and changes nothing', async () => {
      const done = await delivered();
      const response = await call('POST', `/${done.webhookId}/retry-now`);
      assert.equal(response.status, 409);
      assert.deepEqual(response.body, { detail: 'Cannot retry a delivery whose status is delivered.' });
      assert.deepEqual(await call('POST', `/${randomUUID()}/retry-now`), {
        status: 404,
        body: { detail: 'Not found.' },
      });
      assert.deepEqual(await call('POST', '/not-a-uuid/retry-now'), { status: 404, body: { detail: 'Not found.' } });
    });

    it('answers 409 at once while an attempt is being sent, and leaves nothing in the history', async () => {
      // A partner that holds attempt 1 open: the delivery is sending, not waiting.
      const event = candidate();
      const { webhookId } = prepareWebhook(event);
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      const previous = partner.handler;
      partner.handler = (req, res, body) => {
        if (req.headers['webhook-id'] === webhookId) void held.then(() => res.writeHead(204).end());
        else previous(req, res, body);
      };
      try {
        const accepted = await call('POST', '', event);
        await eventually('attempt 1 at the partner', async () => requestsFor(webhookId).length === 1);
        const response = await call('POST', `/${webhookId}/retry-now`);
        assert.deepEqual(response, {
          status: 409,
          body: { detail: 'Cannot retry a delivery that is sending an attempt now.' },
        });
        release();
        const handle = client.workflow.getHandle(accepted.body.workflow_id);
        await handle.result();
        const history = await handle.fetchHistory();
        assert.equal(occurrencesIn(history, 'retryNow'), 0);
      } finally {
        partner.handler = previous;
      }
    });
  });

  describe('cancel', () => {
    it('stops a waiting delivery: 202, then cancelled in PostgreSQL and WebhookStatus; a second cancel is 409', async () => {
      const { webhookId, handle, accepted } = await waitingDelivery();
      const response = await call('POST', `/${webhookId}/cancel`);
      assert.deepEqual(response, { status: 202, body: { webhook_id: webhookId, status_url: accepted.status_url } });
      await assert.rejects(handle.result(), /cancelled/i);
      assert.equal((await db.knex('webhook_events').where({ id: webhookId }).first()).status, 'cancelled');
      await eventually(
        'WebhookStatus cancelled',
        async () => (await statusAttribute(accepted.workflow_id)) === 'cancelled',
      );
      assert.equal(requestsFor(webhookId).length, 1);
      assert.deepEqual(await call('POST', `/${webhookId}/cancel`), {
        status: 409,
        body: { detail: 'Cannot cancel a delivery whose status is cancelled.' },
      });
    });
  });

  describe('redeliver', () => {
    it('starts a new delivery of a finished webhook with the same webhook-id header and body, linked in PostgreSQL and the memo', async () => {
      const original = await delivered();
      const sent = requestsFor(original.webhookId)[0];
      const response = await call('POST', `/${original.webhookId}/redeliver`);
      assert.equal(response.status, 202);
      const redelivery = response.body;
      assert.equal(redelivery.redelivery_of, original.webhookId);
      assert.notEqual(redelivery.webhook_id, original.webhookId);
      assert.match(redelivery.workflow_id, new RegExp(`^${original.workflowId}-redelivery-${redelivery.webhook_id}$`));
      assert.equal(redelivery.status_url, `${api.url}/internal/v1/webhooks/${redelivery.webhook_id}`);
      const handle = client.workflow.getHandle(redelivery.workflow_id);
      await handle.result();
      const both = requestsFor(original.webhookId);
      assert.equal(both.length, 2);
      assert.equal(both[1].body, sent.body, 'byte-identical body');
      const row = await db.knex('webhook_events').where({ id: redelivery.webhook_id }).first();
      assert.deepEqual(
        [row.redelivery_of, row.event_id, row.status],
        [original.webhookId, original.event.event_id, 'delivered'],
      );
      assert.deepEqual((await handle.describe()).memo, { redelivery_of: original.webhookId });
      const view = await call('GET', `/${redelivery.webhook_id}`);
      assert.equal(view.body.redelivery_of, original.webhookId);

      // Redelivering the redelivery points at the original again.
      const again = await call('POST', `/${redelivery.webhook_id}/redeliver`);
      assert.equal(again.body.redelivery_of, original.webhookId);
      await client.workflow.getHandle(again.body.workflow_id).result();
      assert.equal(requestsFor(original.webhookId).length, 3);
    });

    it('answers 409 for a pending delivery and writes nothing', async () => {
      const { webhookId, handle } = await waitingDelivery();
      const before = Number((await db.knex('webhook_events').count({ n: '*' }))[0].n);
      assert.deepEqual(await call('POST', `/${webhookId}/redeliver`), {
        status: 409,
        body: { detail: 'Only a finished delivery can be redelivered; this one is pending.' },
      });
      assert.equal(Number((await db.knex('webhook_events').count({ n: '*' }))[0].n), before);
      await handle.cancel();
    });

    it('redelivers 1,000 failed deliveries in bounded calls; an identical call starts nothing new', async function () {
      this.timeout(300_000);
      const company = `bulk-${randomUUID().slice(0, 8)}`;
      const originals = Array.from({ length: 1000 }, (_, i) => {
        const event = { ...candidate(company), event_id: `bulk-${company}-${i}` };
        const { event_id: eventId, ...envelope } = event;
        const ids = webhookIds(event as never);
        return {
          id: ids.webhookId,
          event_id: eventId,
          event_type: 'candidate',
          action: 'new',
          company_id: company,
          body: envelopeBody(toEnvelope(envelope as never)),
          workflow_id: ids.workflowId,
          run_id: randomUUID(),
          status: 'failed',
          created_at: new Date(Date.UTC(2026, 0, 1) + i * 1000),
          finished_at: new Date(Date.UTC(2026, 0, 1) + i * 1000),
        };
      });
      for (let i = 0; i < originals.length; i += 250)
        await db.knex('webhook_events').insert(originals.slice(i, i + 250));
      const filter = { status: 'failed', company_id: company, since: '2026-01-01T00:00:00Z' };

      const first = await call('POST', '/redeliver', { ...filter, limit: 600 });
      assert.deepEqual(first, {
        status: 200,
        body: { started: 600, skipped_expired_links: 0, skipped_payload_removed: 0, more: true },
      });
      const second = await call('POST', '/redeliver', { ...filter, limit: 600 });
      assert.deepEqual(second, {
        status: 200,
        body: { started: 400, skipped_expired_links: 0, skipped_payload_removed: 0, more: false },
      });
      const third = await call('POST', '/redeliver', { ...filter, limit: 600 });
      assert.deepEqual(third, {
        status: 200,
        body: { started: 0, skipped_expired_links: 0, skipped_payload_removed: 0, more: false },
      });

      const redeliveries = db.knex('webhook_events').whereIn(
        'redelivery_of',
        originals.map((o) => o.id),
      );
      assert.equal(Number((await redeliveries.clone().count({ n: '*' }))[0].n), 1000);
      await eventually(
        '1,000 redeliveries delivered',
        async () => Number((await redeliveries.clone().where({ status: 'delivered' }).count({ n: '*' }))[0].n) === 1000,
        180_000,
      );
      const headerIds = partner.requests.map((r) => String(r.headers['webhook-id']));
      assert.deepEqual(
        [...new Set(headerIds)].sort(),
        originals.map((o) => o.id).sort(),
        'each original redelivered, under its own webhook-id',
      );
      // One POST per recorded attempt: a second one only after a recorded failure (a 2 s timeout on a loaded machine).
      const attempts = await db
        .knex('webhook_attempts')
        .whereIn('webhook_id', redeliveries.clone().select('id'))
        .count({ n: '*' });
      assert.equal(headerIds.length, Number(attempts[0].n), 'one POST per recorded attempt');
      const bodies = new Map(originals.map((o) => [o.id, o.body]));
      assert.ok(partner.requests.every((r) => r.body === bodies.get(String(r.headers['webhook-id']))));
      assert.deepEqual(await call('POST', '/redeliver', filter), {
        status: 200,
        body: { started: 0, skipped_expired_links: 0, skipped_payload_removed: 0, more: false },
      });
    });

    it('answers 400 for a filter that names an unfinished status or is malformed, and starts nothing', async () => {
      assert.deepEqual(await call('POST', '/redeliver', { status: 'waiting' }), {
        status: 400,
        body: {
          detail: 'Invalid filter or paging.',
          errors: [
            {
              path: 'status',
              message:
                'must be one of delivered, failed, cancelled, terminated: only finished deliveries are redelivered',
            },
          ],
        },
      });
      assert.deepEqual(await call('POST', '/redeliver', { since: 'yesterday', colour: 'red' }), {
        status: 400,
        body: {
          detail: 'Invalid filter or paging.',
          errors: [
            { path: 'since', message: 'must be an ISO 8601 date-time with a time zone, such as 2026-11-23T10:00:00Z' },
            { path: 'colour', message: 'unknown field' },
          ],
        },
      });
    });
  });

  describe('signed links past their deadline', () => {
    const HOUR = 3600_000;
    /** Moves a webhook's acceptance `hours` into the past: its links' deadlines move with it. */
    const acceptedHoursAgo = (webhookId: string, hours: number) =>
      db
        .knex('webhook_events')
        .where({ id: webhookId })
        .update({ accepted_at: db.knex.raw(`now() - ?::interval`, [`${hours} hours`]) });
    const acceptedAt = async (webhookId: string): Promise<Date> =>
      (await db.knex('webhook_events').where({ id: webhookId }).first('accepted_at')).accepted_at;
    const redeliveriesOf = async (webhookId: string) =>
      Number((await db.knex('webhook_events').where({ redelivery_of: webhookId }).count({ n: '*' }))[0].n);

    it("with a clock the test controls: refused 1 ms past the file answers' deadline, writing nothing; allowed at the deadline", async () => {
      const original = await delivered();
      const at = (await acceptedAt(original.webhookId)).getTime();
      const options = (ms: number) => ({
        sendTimeoutMs: config.PARTNER_TIMEOUT_MS,
        atRest: IN_CLEAR,
        now: () => new Date(at + ms),
      });
      await assert.rejects(
        redeliverWebhook(db.knex, stack.gateway, OPERATOR, original.webhookId, options(2 * HOUR + 1)),
        (error: Error) => {
          assert.ok(error instanceof ExpiredLinksError);
          assert.equal(
            error.message,
            `The event's signed links are past their deadline (file_answers expired at ${new Date(at + 2 * HOUR).toISOString()}; ` +
              `the event was accepted at ${new Date(at).toISOString()}), so a redelivery would send dead links. ` +
              'Redeliver with allow_expired_links (CLI: --allow-expired-links) to send them anyway.',
          );
          return true;
        },
      );
      assert.equal(await redeliveriesOf(original.webhookId), 0);
      const onTime = await redeliverWebhook(db.knex, stack.gateway, OPERATOR, original.webhookId, options(2 * HOUR));
      await client.workflow.getHandle(onTime.workflowId).result();
      assert.equal(await redeliveriesOf(original.webhookId), 1);
      const bothDead = redeliverWebhook(db.knex, stack.gateway, OPERATOR, original.webhookId, {
        ...options(24 * HOUR + 1),
      });
      await assert.rejects(bothDead, /\(files expired at [^,]+, file_answers expired at /);
    });

    it('redeliver answers 409 with the deadlines unless allow_expired_links=true; the attempt then says its links were dead', async () => {
      const original = await delivered();
      await acceptedHoursAgo(original.webhookId, 25);
      const at = await acceptedAt(original.webhookId);
      const refused = await call('POST', `/${original.webhookId}/redeliver`);
      assert.equal(refused.status, 409);
      assert.deepEqual(refused.body, {
        detail:
          `The event's signed links are past their deadline (files expired at ${new Date(at.getTime() + 24 * HOUR).toISOString()}, ` +
          `file_answers expired at ${new Date(at.getTime() + 2 * HOUR).toISOString()}; the event was accepted at ${at.toISOString()}), ` +
          'so a redelivery would send dead links. Redeliver with allow_expired_links (CLI: --allow-expired-links) to send them anyway.',
      });
      assert.equal(await redeliveriesOf(original.webhookId), 0);
      assert.deepEqual(await call('POST', `/${original.webhookId}/redeliver?allow_expired_links=maybe`), {
        status: 400,
        body: {
          detail: 'Invalid filter or paging.',
          errors: [{ path: 'allow_expired_links', message: 'must be true or false' }],
        },
      });

      const allowed = await call('POST', `/${original.webhookId}/redeliver?allow_expired_links=true`);
      assert.equal(allowed.status, 202);
      await client.workflow.getHandle(allowed.body.workflow_id).result();
      const shown = await call('GET', `/${allowed.body.webhook_id}`);
      assert.equal(shown.body.accepted_at, at.toISOString(), "a redelivery keeps its original's acceptance time");
      assert.deepEqual(
        shown.body.attempts.map((a: { expired_links: string[] }) => a.expired_links),
        [['files', 'file_answers']],
      );
      assert.deepEqual(shown.body.signed_links, [
        { kind: 'files', expires_at: new Date(at.getTime() + 24 * HOUR).toISOString(), expired: true },
        { kind: 'file_answers', expires_at: new Date(at.getTime() + 2 * HOUR).toISOString(), expired: true },
      ]);
      const log = await call('GET', `?company_id=acme&limit=500`);
      const line = log.body.results.find((row: { webhook_id: string }) => row.webhook_id === allowed.body.webhook_id);
      assert.deepEqual([line.expired_links, line.status], [['files', 'file_answers'], 'delivered']);
      const originalLine = log.body.results.find(
        (row: { webhook_id: string }) => row.webhook_id === original.webhookId,
      );
      assert.deepEqual(originalLine.expired_links, [], 'the original was sent in time');
    });

    it('a bulk redelivery skips and counts events with dead links, and sends them when allowed', async () => {
      const company = `links-${randomUUID().slice(0, 8)}`;
      const fresh = await call('POST', '', candidate(company));
      const stale = await call('POST', '', candidate(company));
      await client.workflow.getHandle(fresh.body.workflow_id).result();
      await client.workflow.getHandle(stale.body.workflow_id).result();
      await acceptedHoursAgo(stale.body.webhook_id, 3);
      const filter = { company_id: company, status: 'delivered' };
      assert.deepEqual(await call('POST', '/redeliver', filter), {
        status: 200,
        body: { started: 1, skipped_expired_links: 1, skipped_payload_removed: 0, more: false },
      });
      assert.deepEqual(
        [await redeliveriesOf(fresh.body.webhook_id), await redeliveriesOf(stale.body.webhook_id)],
        [1, 0],
      );
      assert.deepEqual(await call('POST', '/redeliver', { ...filter, allow_expired_links: true }), {
        status: 200,
        body: { started: 1, skipped_expired_links: 0, skipped_payload_removed: 0, more: false },
      });
      assert.equal(await redeliveriesOf(stale.body.webhook_id), 1);
    });
  });

  describe('the delivery log', () => {
    const company = `log-${randomUUID().slice(0, 8)}`;
    const rows: { id: string; status: string; created_at: Date }[] = [];

    before(async () => {
      // Six rows one second apart, newest last: two delivered, one failed, one waiting, one pending, one cancelled.
      const statuses = ['delivered', 'failed', 'pending', 'delivered', 'cancelled', 'waiting'];
      for (const [i, status] of statuses.entries()) {
        const id = randomUUID();
        const created = new Date(Date.UTC(2026, 5, 1, 12, 0, i));
        rows.push({ id, status, created_at: created });
        await db.knex('webhook_events').insert({
          id,
          event_id: `log-${company}-${i}`,
          event_type: i === 0 ? 'job' : 'candidate',
          action: 'new',
          company_id: company,
          body: JSON.stringify({ event_type: 'candidate', action: 'new', data: {} }),
          workflow_id: `wf-${id}`,
          run_id: randomUUID(),
          status: status === 'waiting' ? 'pending' : status,
          claimed_attempt: status === 'waiting' ? 1 : 0,
          created_at: created,
        });
        if (status === 'waiting') {
          await db.knex('webhook_attempts').insert({
            webhook_id: id,
            attempt: 1,
            scheduled_at: created,
            started_at: created,
            duration_ms: 5,
            http_status: 500,
            succeeded: false,
          });
        }
      }
    });

    const newestFirst = (wanted: (row: (typeof rows)[number]) => boolean) =>
      rows
        .filter(wanted)
        .reverse()
        .map((r) => r.id);

    it('lists newest first with keyset pages whose next links walk every row once', async () => {
      const seen: string[] = [];
      let url: string | null = `${api.url}/internal/v1/webhooks?company_id=${company}&limit=4`;
      const pages: number[] = [];
      while (url) {
        const response = await fetch(url, { headers: { authorization: `Bearer ${INTERNAL_TOKEN}` } });
        assert.equal(response.status, 200);
        const page = (await response.json()) as { next: string | null; results: { webhook_id: string }[] };
        pages.push(page.results.length);
        seen.push(...page.results.map((r) => r.webhook_id));
        url = page.next;
      }
      assert.deepEqual(pages, [4, 2]);
      assert.deepEqual(
        seen,
        newestFirst(() => true),
      );
    });

    it('shows one line per webhook with its derived status and attempt count', async () => {
      const { body } = await call('GET', `?company_id=${company}&limit=1`);
      const newest = rows.at(-1)!;
      assert.deepEqual(body.results, [
        {
          webhook_id: newest.id,
          event_id: `log-${company}-5`,
          event_type: 'candidate',
          action: 'new',
          company_id: company,
          status: 'waiting',
          attempts: 1,
          expired_links: [],
          redelivery_of: null,
          is_test: false,
          created_at: newest.created_at.toISOString(),
          finished_at: null,
          status_url: `${api.url}/internal/v1/webhooks/${newest.id}`,
        },
      ]);
      assert.match(
        body.next,
        new RegExp(`^${api.url}/internal/v1/webhooks\\?company_id=${company}&limit=1&cursor=[A-Za-z0-9_-]+$`),
      );
    });

    for (const status of ['pending', 'waiting', 'delivered', 'failed', 'cancelled']) {
      it(`filters by status ${status}`, async () => {
        const { status: code, body } = await call('GET', `?company_id=${company}&status=${status}`);
        assert.equal(code, 200);
        assert.deepEqual(
          body.results.map((r: { webhook_id: string }) => r.webhook_id),
          newestFirst((r) => r.status === status),
        );
        assert.equal(body.next, null);
      });
    }

    it('filters by event_type, action and the since/until window', async () => {
      const ids = async (query: string) =>
        (await call('GET', `?company_id=${company}&${query}`)).body.results.map(
          (r: { webhook_id: string }) => r.webhook_id,
        );
      assert.deepEqual(await ids('event_type=job'), [rows[0].id]);
      assert.deepEqual(await ids('action=signup'), []);
      assert.deepEqual(await ids('since=2026-06-01T12:00:02Z&until=2026-06-01T12:00:04Z'), [rows[3].id, rows[2].id]);
      assert.deepEqual(await ids('since=2026-06-01T14:00:04%2B02:00'), [rows[5].id, rows[4].id]);
    });

    it('answers 400 with one error per bad parameter, and for an altered cursor', async () => {
      assert.deepEqual(await call('GET', '?status=lost&limit=0&event_type=user&until=2026-01-01'), {
        status: 400,
        body: {
          detail: 'Invalid filter or paging.',
          errors: [
            { path: 'event_type', message: 'Invalid option: expected one of "company"|"job"|"candidate"' },
            { path: 'until', message: 'must be an ISO 8601 date-time with a time zone, such as 2026-11-23T10:00:00Z' },
            {
              path: 'status',
              message:
                'Invalid option: expected one of "pending"|"held"|"waiting"|"delivered"|"failed"|"cancelled"|"terminated"',
            },
            { path: 'limit', message: 'must be at least 1' },
          ],
        },
      });
      assert.deepEqual(await call('GET', '?cursor=bm90LWEtY3Vyc29y'), {
        status: 400,
        body: {
          detail: 'Invalid filter or paging.',
          errors: [{ path: 'cursor', message: 'is not a cursor this API gave out' }],
        },
      });
      assert.deepEqual(await call('GET', '?since=2026-06-02T00:00:00Z&until=2026-06-01T00:00:00Z'), {
        status: 400,
        body: { detail: 'Invalid filter or paging.', errors: [{ path: 'until', message: 'must be later than since' }] },
      });
    });

    it('answers 401 without the internal token', async () => {
      const response = await fetch(`${api.url}/internal/v1/webhooks`);
      assert.equal(response.status, 401);
    });
  });

  describe('the CLI: partner-service webhooks list|show|retry-now|cancel|redeliver', () => {
    const cli = async (...args: string[]) => {
      try {
        const { stdout, stderr } = await run(
          process.execPath,
          ['--require', 'tsx/cjs', 'cli/main.ts', 'webhooks', ...args],
          {
            cwd: ROOT,
            env: {
              PATH: process.env.PATH ?? '',
              DATABASE_URL: db.url,
              TEMPORAL_ADDRESS: server.address,
              TEMPORAL_TASK_QUEUE: config.TEMPORAL_TASK_QUEUE,
              LOG_LEVEL: 'warn',
            },
          },
        );
        return { code: 0, stdout, stderr };
      } catch (error) {
        const e = error as { code: number; stdout: string; stderr: string };
        return { code: e.code, stdout: e.stdout, stderr: e.stderr };
      }
    };
    const json = (stdout: string) => JSON.parse(stdout) as Record<string, any>;

    it('lists with filters and pages by cursor, and shows one webhook', async () => {
      const company = `cli-${randomUUID().slice(0, 8)}`;
      const first = await call('POST', '', candidate(company));
      const second = await call('POST', '', candidate(company));
      await client.workflow.getHandle(second.body.workflow_id).result();
      await client.workflow.getHandle(first.body.workflow_id).result();
      const page1 = await cli('list', '--company-id', company, '--status', 'delivered', '--limit', '1');
      assert.equal(page1.code, 0, page1.stderr);
      const listed = json(page1.stdout);
      assert.deepEqual(
        listed.results.map((r: { webhook_id: string }) => r.webhook_id),
        [second.body.webhook_id],
      );
      const page2 = json(
        (
          await cli(
            'list',
            '--company-id',
            company,
            '--status',
            'delivered',
            '--limit',
            '1',
            '--cursor',
            listed.next_cursor,
          )
        ).stdout,
      );
      assert.deepEqual(
        [page2.results.map((r: { webhook_id: string }) => r.webhook_id), page2.next_cursor],
        [[first.body.webhook_id], null],
      );
      const shown = await cli('show', first.body.webhook_id);
      assert.equal(shown.code, 0, shown.stderr);
      assert.deepEqual(
        [json(shown.stdout).status, json(shown.stdout).attempts.length, json(shown.stdout).live],
        ['delivered', 1, null],
      );
    });

    it('retries now, cancels and redelivers, and exits 1 with the reason when the state does not allow it', async () => {
      const waiting = await waitingDelivery();
      answers.set(waiting.webhookId, 204);
      const retried = await cli('retry-now', waiting.webhookId);
      assert.deepEqual([retried.code, json(retried.stdout)], [0, { webhook_id: waiting.webhookId, attempt: 2 }]);
      await waiting.handle.result();
      assert.deepEqual(await cli('retry-now', waiting.webhookId), {
        code: 1,
        stdout: '',
        stderr: 'Cannot retry a delivery whose status is delivered.\n',
      });

      const other = await waitingDelivery();
      const cancelled = await cli('cancel', other.webhookId);
      assert.deepEqual(
        [cancelled.code, json(cancelled.stdout)],
        [0, { webhook_id: other.webhookId, status: 'cancel requested' }],
      );
      await assert.rejects(other.handle.result(), /cancelled/i);

      answers.set(other.webhookId, 204);
      const redelivered = await cli('redeliver', other.webhookId);
      assert.equal(redelivered.code, 0, redelivered.stderr);
      assert.equal(json(redelivered.stdout).redelivery_of, other.webhookId);
      await client.workflow.getHandle(json(redelivered.stdout).workflow_id).result();
      assert.deepEqual(await cli('cancel', randomUUID().replace(/.$/, '0')).then((r) => r.code), 1);
    });

    it('redeliver refuses an event whose signed links are past their deadline (exit 1) unless --allow-expired-links', async () => {
      const company = `cli-links-${randomUUID().slice(0, 8)}`;
      const accepted = await call('POST', '', candidate(company));
      await client.workflow.getHandle(accepted.body.workflow_id).result();
      const webhookId = accepted.body.webhook_id as string;
      await db
        .knex('webhook_events')
        .where({ id: webhookId })
        .update({ accepted_at: db.knex.raw(`now() - interval '25 hours'`) });
      const refused = await cli('redeliver', webhookId);
      assert.equal(refused.code, 1);
      assert.match(
        refused.stderr,
        /^The event's signed links are past their deadline \(files expired at .+\), so a redelivery would send dead links\. Redeliver with allow_expired_links \(CLI: --allow-expired-links\) to send them anyway\.\n$/,
      );
      const bulk = await cli('redeliver', '--all', '--company-id', company);
      assert.deepEqual(
        [bulk.code, json(bulk.stdout)],
        [0, { started: 0, skipped_expired_links: 1, skipped_payload_removed: 0, more: false }],
      );
      const allowed = await cli('redeliver', webhookId, '--allow-expired-links');
      assert.equal(allowed.code, 0, allowed.stderr);
      await client.workflow.getHandle(json(allowed.stdout).workflow_id).result();
      const bulkAllowed = await cli(
        'redeliver',
        '--all',
        '--company-id',
        company,
        '--status',
        'delivered',
        '--allow-expired-links',
      );
      assert.deepEqual(
        [bulkAllowed.code, json(bulkAllowed.stdout)],
        [0, { started: 1, skipped_expired_links: 0, skipped_payload_removed: 0, more: false }],
      );
    });

    it('redelivers in bulk with --all once per filter, and rejects bad usage with exit 2', async () => {
      const company = `cli-bulk-${randomUUID().slice(0, 8)}`;
      const done = await call('POST', '', candidate(company));
      await client.workflow.getHandle(done.body.workflow_id).result();
      const bulk = await cli('redeliver', '--all', '--company-id', company, '--status', 'delivered');
      assert.deepEqual(
        [bulk.code, json(bulk.stdout)],
        [0, { started: 1, skipped_expired_links: 0, skipped_payload_removed: 0, more: false }],
      );
      const again = await cli('redeliver', '--all', '--company-id', company, '--status', 'delivered');
      assert.deepEqual(json(again.stdout), {
        started: 0,
        skipped_expired_links: 0,
        skipped_payload_removed: 0,
        more: false,
      });
      const bad = await cli('list', '--status', 'lost');
      assert.equal(bad.code, 2);
      assert.match(
        bad.stderr,
        /^partner-service webhooks: status: Invalid option: expected one of "pending"\|"held"\|"waiting"/,
      );
      assert.equal((await cli('retry-now')).code, 2);
    });
  });

  describe('the OpenAPI document', () => {
    it('is valid and documents every internal route, and real answers match their declared schemas', async () => {
      const doc: Doc = await (await fetch(`${api.url}/openapi.json`)).json();
      assert.equal(openApi31Validator()(doc), true, 'a valid OpenAPI 3.1 document');
      const documented = documentedAnswers(doc);
      const root = '/internal/v1/webhooks';
      const one = `${root}/{webhook_id}`;
      const waiting = await waitingDelivery();
      answers.set(waiting.webhookId, 204);
      documented(root, 'get', await call('GET', '?limit=2'));
      documented(root, 'get', await call('GET', '?limit=x'));
      documented(root, 'post', await call('POST', '', candidate()));
      documented(one, 'get', await call('GET', `/${waiting.webhookId}`));
      documented(one, 'get', await call('GET', `/${randomUUID()}`));
      documented(`${one}/retry-now`, 'post', await call('POST', `/${waiting.webhookId}/retry-now`));
      await waiting.handle.result();
      documented(one, 'get', await call('GET', `/${waiting.webhookId}`));
      documented(`${one}/retry-now`, 'post', await call('POST', `/${waiting.webhookId}/retry-now`));
      documented(`${one}/cancel`, 'post', await call('POST', `/${waiting.webhookId}/cancel`));
      const redelivery = await call('POST', `/${waiting.webhookId}/redeliver`);
      documented(`${one}/redeliver`, 'post', redelivery);
      await client.workflow.getHandle(redelivery.body.workflow_id).result();
      const other = await waitingDelivery();
      documented(`${one}/redeliver`, 'post', await call('POST', `/${other.webhookId}/redeliver`));
      documented(`${one}/cancel`, 'post', await call('POST', `/${other.webhookId}/cancel`));
      documented(
        `${root}/redeliver`,
        'post',
        await call('POST', '/redeliver', { status: 'failed', company_id: 'nobody' }),
      );
      documented(
        `${root}/redeliver`,
        'post',
        await call('POST', '/redeliver', { status: 'failed', company_id: 'nobody', dry_run: true }),
      );
      documented(`${root}/redeliver`, 'post', await call('POST', '/redeliver', { status: 'waiting' }));
      // The partner controls, each answer against its schema; the pause is lifted at once, since the gate is this file's.
      const partner = '/internal/v1/partner';
      const partnerCall = (method: 'GET' | 'POST', path: string, body?: unknown) => callAt(partner, method, path, body);
      documented(partner, 'get', await partnerCall('GET', ''));
      documented(`${partner}/pause`, 'post', await partnerCall('POST', '/pause', { reason: '' }));
      documented(`${partner}/pause`, 'post', await partnerCall('POST', '/pause', { reason: 'schema check' }));
      documented(`${partner}/resume`, 'post', await partnerCall('POST', '/resume'));
      documented(`${partner}/limit`, 'post', await partnerCall('POST', '/limit', { max_per_second: 0 }));
      documented(`${partner}/limit`, 'post', await partnerCall('POST', '/limit', { max_per_second: null }));
      // The audit trail of those changes: a page with rows and a next link, and a refused filter.
      const audit = '/internal/v1/audit';
      const trail = await callAt(audit, 'GET', '?limit=2');
      assert.equal(trail.body.results.length, 2);
      documented(audit, 'get', trail);
      documented(audit, 'get', await callAt(audit, 'GET', '?action=partner.delete'));
      const verified = await callAt(`${audit}/verify`, 'GET', '');
      assert.equal(verified.body.intact, true, JSON.stringify(verified.body));
      documented(`${audit}/verify`, 'get', verified);
      // Ordering (off here): the status, and skip and retry of a key with no lane. A blocked key's answers are
      // in test/ordering/entity-ordering.test.ts.
      const ordering = '/internal/v1/ordering';
      documented(ordering, 'get', await callAt(ordering, 'GET', '?limit=5'));
      documented(ordering, 'get', await callAt(ordering, 'GET', '?limit=0'));
      for (const decision of ['skip', 'retry']) {
        const unknown = await callAt(`${ordering}/${decision}`, 'POST', '', { key: 'job:no-such-key' });
        assert.equal(unknown.status, 404);
        documented(`${ordering}/${decision}`, 'post', unknown);
        const bad = await callAt(`${ordering}/${decision}`, 'POST', '', { key: '' });
        assert.equal(bad.status, 400);
        documented(`${ordering}/${decision}`, 'post', bad);
      }
      const paths = Object.keys(doc.paths).filter((p) => p.startsWith('/internal/'));
      // The erasures' answers are checked against the document in erasure.test.ts.
      const erasures = ['/internal/v1/erasures', '/internal/v1/erasures/{erasure_id}'];
      assert.deepEqual(
        paths.sort(),
        [
          root,
          `${root}/redeliver`,
          one,
          `${one}/cancel`,
          `${one}/redeliver`,
          `${one}/retry-now`,
          partner,
          `${partner}/pause`,
          `${partner}/resume`,
          `${partner}/limit`,
          audit,
          `${audit}/verify`,
          ordering,
          `${ordering}/skip`,
          `${ordering}/retry`,
          ...erasures,
        ].sort(),
      );
    });
  });

  describe('with Temporal unreachable', () => {
    it('shows the database view of a pending webhook and says so; operations answer 503', async () => {
      const port = await closedPort();
      const offline = loadConfig({
        ...process.env,
        INTERNAL_API_TOKEN: INTERNAL_TOKEN,
        TEMPORAL_ADDRESS: `127.0.0.1:${port}`,
      });
      const offlineStarter = createTemporalGateway(offline, logger, { connectTimeoutMs: 500 });
      const offlineApi = await startApiServer(
        { config: offline, knex: db.knex, logger, temporalGateway: offlineStarter },
        0,
        '127.0.0.1',
      );
      try {
        const { webhookId, handle } = await waitingDelivery();
        const headers = { authorization: `Bearer ${INTERNAL_TOKEN}` };
        const response = await fetch(`${offlineApi.url}/internal/v1/webhooks/${webhookId}`, { headers });
        assert.equal(response.status, 200);
        const view = (await response.json()) as Record<string, any>;
        assert.equal(view.status, 'pending');
        assert.equal(view.attempts.length, 1);
        assert.equal(view.live.source, 'database');
        assert.match(
          view.live.reason,
          new RegExp(`^Temporal did not answer: cannot connect to 127\\.0\\.0\\.1:${port} `),
        );
        const retry = await fetch(`${offlineApi.url}/internal/v1/webhooks/${webhookId}/retry-now`, {
          method: 'POST',
          headers,
        });
        assert.equal(retry.status, 503);
        assert.equal(retry.headers.get('retry-after'), '30');
        assert.equal(
          ((await retry.json()) as { detail: string }).detail,
          'Temporal is unavailable: nothing was changed. Retry later.',
        );
        await handle.cancel();
      } finally {
        await offlineApi.close();
        await offlineStarter.close();
      }
    });
  });
});
