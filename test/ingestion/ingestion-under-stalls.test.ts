// Ingestion while the way to Temporal stalls: `partner-service api` reaches a real dev server through a TCP proxy
// that holds the bytes one way or the other past the start call's 5 s deadline, while `partner-service worker`
// polls the server directly. Some starts end in doubt on purpose; the worker must settle each one.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { findFreePort } from '../../lib/ports';
import { webhookIds } from '../../application/ingestion/ids';
import { postWebhook } from '../support/api';
import { eventually } from '../support/eventually';
import { sample } from '../support/metrics-text';
import { useProxiedService } from '../support/proxied-service';
import jobNew from '../fixtures/events/job-new.json';
import { answer } from '../support/partner-server';
import { INTERNAL_TOKEN } from '../support/tokens';

const CALLERS = 24;
const BOUND = 12;
const STALL_MS = 6500;
const RESOLUTION_BOUND_MS = 120_000;

interface Answer {
  readonly eventId: string;
  readonly status: number;
  readonly reason?: string;
  readonly webhookId?: string;
  readonly answeredAt: number;
}

describe('ingestion while the way to Temporal stalls past the start deadline', function () {
  this.timeout(300_000);
  const { processes, service } = useProxiedService('ingestion-under-stalls', answer(204), {
    INTERNAL_API_TOKEN: INTERNAL_TOKEN,
  });

  it('delivers every 202, settles every outcome_unknown within 2 minutes (delivered or gone), and answers no 5xx but the documented 503s', async () => {
    const { fixtures, proxy } = service();
    const queue = `stalls-${randomUUID()}`;
    const workerPort = await findFreePort();
    await processes.startWorker(queue, { WEBHOOK_START_DOUBT_SECONDS: '10', WORKER_HTTP_PORT: String(workerPort) });
    const api = await processes.startApi(queue, {
      TEMPORAL_ADDRESS: `127.0.0.1:${proxy.port}`,
      INGEST_MAX_STARTS_IN_FLIGHT: String(BOUND),
    });
    const post = (event: object) => postWebhook(api, INTERNAL_TOKEN, event);
    const { db, partner } = fixtures;
    assert.equal(
      (await post({ ...jobNew, event_id: `warm-up-${randomUUID()}` })).status,
      202,
      'the api is connected before the stalls',
    );

    // Callers send new events without pause; meanwhile the proxy stalls requests, then answers, then neither.
    const answers: Answer[] = [];
    let sending = true;
    const caller = async () => {
      while (sending) {
        const eventId = `job-new-${randomUUID()}`;
        const response = await post({ ...jobNew, event_id: eventId });
        const body = (await response.json()) as { webhook_id?: string; reason?: string; detail?: string };
        answers.push({
          eventId,
          status: response.status,
          reason: body.reason,
          webhookId: body.webhook_id,
          answeredAt: Date.now(),
        });
        if (response.status === 503 && body.reason === 'overloaded')
          await delay(Number(response.headers.get('retry-after')) * 1000);
      }
    };
    const callers = Array.from({ length: CALLERS }, caller);
    for (const stall of [
      { toServer: STALL_MS },
      { toClient: STALL_MS },
      { toServer: STALL_MS },
      { toClient: STALL_MS },
    ]) {
      await delay(2000);
      proxy.delay(stall);
      await delay(1500);
      proxy.delay({ toServer: 0, toClient: 0 });
    }
    await delay(STALL_MS + 2000);
    sending = false;
    await Promise.all(callers);

    const outcomes = (status: number, reason?: string) =>
      answers.filter((a) => a.status === status && a.reason === reason);
    const accepted = outcomes(202);
    const overloaded = outcomes(503, 'overloaded');
    const unknown = outcomes(503, 'outcome_unknown');
    const unreachable = outcomes(503, 'temporal_unreachable');
    assert.deepEqual(
      answers.filter(
        (a) =>
          a.status !== 202 &&
          !(a.status === 503 && ['overloaded', 'outcome_unknown', 'temporal_unreachable'].includes(a.reason!)),
      ),
      [],
      'no answer but 202 and the three documented 503s',
    );
    assert.ok(unknown.length > 0, 'the stalls put some starts in doubt');
    assert.ok(overloaded.length > 0, 'the stalls filled the bound');

    // The api counted each 503 by the reason it answered.
    const apiMetrics = await (await fetch(`${api}/metrics`)).text();
    for (const [reason, list] of [
      ['overloaded', overloaded],
      ['outcome_unknown', unknown],
      ['temporal_unreachable', unreachable],
    ] as const) {
      assert.equal(
        sample(apiMetrics, `partner_service_ingest_refusals_total{reason="${reason}"}`),
        list.length,
        reason,
      );
    }

    const delivered = () => new Set(partner.requests.map((request) => String(request.headers['webhook-id'])));
    const rowOf = (eventId: string) => db.knex('webhook_events').where({ event_id: eventId }).first('status', 'run_id');
    await eventually(
      'every 202 to be delivered',
      async () => accepted.every((a) => delivered().has(a.webhookId!)),
      120_000,
    );

    // Every outcome_unknown settles without its caller: delivered, or no row (and never delivered).
    const settledAt = new Map<string, number>();
    const lastAnswer = Math.max(...unknown.map((a) => a.answeredAt));
    await eventually(
      'every start in doubt to be settled',
      async () => {
        for (const a of unknown) {
          if (settledAt.has(a.eventId)) continue;
          const row = await rowOf(a.eventId);
          if (!row || row.status === 'delivered') settledAt.set(a.eventId, Date.now());
        }
        return settledAt.size === unknown.length;
      },
      lastAnswer + RESOLUTION_BOUND_MS - Date.now(),
    );
    const slowest = Math.max(...unknown.map((a) => settledAt.get(a.eventId)! - a.answeredAt));
    assert.ok(slowest <= RESOLUTION_BOUND_MS, `settled within 2 minutes (slowest ${slowest} ms)`);

    await delay(3000); // a delivery of a removed row would have shown by now
    const gone: string[] = [];
    for (const a of unknown) {
      const row = await rowOf(a.eventId);
      const { webhookId } = webhookIds({ ...jobNew, event_id: a.eventId } as never);
      if (row) assert.equal(delivered().has(webhookId), true, `${a.eventId} is delivered, as its row says`);
      else {
        gone.push(a.eventId);
        assert.equal(delivered().has(webhookId), false, `${a.eventId} has no row and was never delivered`);
      }
    }
    for (const a of [...overloaded, ...unreachable])
      assert.equal(await rowOf(a.eventId), undefined, 'nothing stored for a refusal that says so');
    const requestsPerWebhook = new Map<string, number>();
    for (const request of partner.requests)
      requestsPerWebhook.set(
        String(request.headers['webhook-id']),
        (requestsPerWebhook.get(String(request.headers['webhook-id'])) ?? 0) + 1,
      );
    assert.deepEqual(
      [...requestsPerWebhook.values()].filter((n) => n > 1),
      [],
      'no webhook delivered twice',
    );

    const workerMetrics = await (await fetch(`http://127.0.0.1:${workerPort}/metrics`)).text();
    assert.equal(sample(workerMetrics, 'partner_service_webhook_starts_in_doubt'), 0);
    const removed = sample(workerMetrics, 'partner_service_webhook_start_resolutions_total{outcome="removed"}')!;
    assert.equal(removed, gone.length, 'every row without a run was removed by the worker');
    console.log(
      `      ${answers.length} answers: ${accepted.length} × 202, ${overloaded.length} overloaded, ${unknown.length} outcome_unknown (${unknown.length - gone.length} delivered, ${gone.length} removed; ` +
        `recorded by lookup ${sample(workerMetrics, 'partner_service_webhook_start_resolutions_total{outcome="recorded"}')}), ${unreachable.length} temporal_unreachable; slowest settlement ${slowest} ms`,
    );
  });
});
