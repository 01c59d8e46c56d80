// The rule behind a webhook's `explanation` (application/webhooks/delivery-explanation.ts): every code, the
// precedence between them, and the error classes in the partner's words.
import assert from 'node:assert/strict';
import {
  EXPLANATION_CODES,
  explainDelivery,
  partnerErrorClass,
  type DeliveryFacts,
  type ExplanationCode,
  type GateFacts,
} from '../../../application/webhooks/delivery-explanation';

const NOW = new Date('2026-11-29T10:00:00.000Z');
const ago = (seconds: number) => new Date(NOW.getTime() - seconds * 1000);
const OPEN: GateFacts = {
  operatorPausedAt: null,
  operatorPauseReason: null,
  partnerPausedAt: null,
  partnerPauseReason: null,
  partnerPausedBy: null,
  trippedAt: null,
  nextProbeAt: null,
  retryAfterUntil: null,
  maxPerSecond: 25,
  slotsTakenAheadMs: 0,
};
const failed503 = { attempt: 1, started_at: ago(30), succeeded: false, http_status: 503, error_class: null };
const PENDING: DeliveryFacts = {
  status: 'pending',
  statusReason: null,
  payloadRemovedAt: null,
  payloadRemovedReason: null,
  finishedAt: null,
  held: false,
  claimedAttempt: 0,
  attempts: [],
  nextAttemptAt: null,
  queuedBehind: null,
  gate: OPEN,
};
const operatorPause = { operatorPausedAt: ago(60), operatorPauseReason: 'maintenance' };
const partnerPause = { partnerPausedAt: ago(50), partnerPauseReason: 'our deploy', partnerPausedBy: 'app:acme-1' };
const breaker = { trippedAt: ago(40), nextProbeAt: new Date(NOW.getTime() + 20_000) };
const throttled = { retryAfterUntil: new Date(NOW.getTime() + 90_000) };

const explain = (facts: Partial<DeliveryFacts>, gate: Partial<GateFacts> = {}) =>
  explainDelivery({ ...PENDING, ...facts, gate: { ...OPEN, ...gate } }, NOW);
const codeOf = (facts: Partial<DeliveryFacts>, gate: Partial<GateFacts> = {}) => explain(facts, gate).code;

describe('delivery explanation', () => {
  it('gives every code, each with its own text', () => {
    const cases: Array<[ExplanationCode, Partial<DeliveryFacts>, Partial<GateFacts>]> = [
      ['delivered', { status: 'delivered', attempts: [{ ...failed503, succeeded: true, http_status: 200 }] }, {}],
      ['retry_scheduled', { claimedAttempt: 1, attempts: [failed503], nextAttemptAt: ago(-70) }, {}],
      ['paused_by_partner', { held: true }, partnerPause],
      ['paused_by_operator', { held: true }, operatorPause],
      ['breaker_open', { held: true }, breaker],
      ['retry_after', { held: true }, throttled],
      ['rate_capped', {}, { slotsTakenAheadMs: 800 }],
      ['queued_behind', { queuedBehind: { webhookId: 'w-ahead', sequence: 3 } }, {}],
      ['sending', { claimedAttempt: 1 }, {}],
      ['failed', { status: 'failed', attempts: [failed503] }, {}],
      ['cancelled', { status: 'cancelled' }, {}],
      ['payload_removed', { status: 'delivered', payloadRemovedReason: 'retention', payloadRemovedAt: ago(5) }, {}],
      ['erased', { status: 'cancelled', statusReason: 'erasure', payloadRemovedReason: 'erasure' }, {}],
    ];
    assert.deepEqual(cases.map(([code]) => code).sort(), [...EXPLANATION_CODES].sort());
    for (const [code, facts, gate] of cases) assert.equal(codeOf(facts, gate), code, code);
  });

  it('says what the last attempt got and when the next goes, and names the webhook ahead', () => {
    assert.equal(
      explain({ claimedAttempt: 1, attempts: [failed503], nextAttemptAt: new Date('2026-11-29T10:01:10.000Z') }).text,
      'Attempt 1 (2026-11-29T09:59:30.000Z) got HTTP 503; the next attempt is at 2026-11-29T10:01:10.000Z.',
    );
    const refused = { ...failed503, http_status: null, error_class: 'connection_refused' as const };
    assert.match(explain({ claimedAttempt: 1, attempts: [refused] }).text, /got a connect error; the next follows/);
    assert.match(
      explain({ queuedBehind: { webhookId: 'w-ahead', sequence: 3 } }).text,
      /behind webhook w-ahead \(sequence 3\)/,
    );
    assert.match(explain({ held: true }, operatorPause).text, /operator paused .*\(reason: maintenance\)/);
    assert.match(explain({ held: true }, partnerPause).text, /app:acme-1 paused .*\(reason: our deploy\)/);
    assert.match(explain({ held: true }, throttled).text, /until 2026-11-29T10:01:30.000Z/);
  });

  it('orders the gate holds: operator pause, partner pause, breaker, Retry-After', () => {
    const all = { ...operatorPause, ...partnerPause, ...breaker, ...throttled };
    assert.equal(codeOf({ held: true }, all), 'paused_by_operator');
    assert.equal(codeOf({ held: true }, { ...all, operatorPausedAt: null }), 'paused_by_partner');
    assert.equal(codeOf({ held: true }, { ...breaker, ...throttled }), 'breaker_open');
    // A Retry-After that has passed holds nothing: released, it waits for a send slot.
    assert.equal(codeOf({ held: true }, { retryAfterUntil: ago(1) }), 'rate_capped');
  });

  it('puts an erasure before retention, a finished status before holds, a queue before the gate', () => {
    assert.equal(codeOf({ status: 'delivered', payloadRemovedReason: 'erasure', payloadRemovedAt: ago(1) }), 'erased');
    const retained = codeOf({ status: 'failed', payloadRemovedReason: 'retention', payloadRemovedAt: ago(1) });
    assert.equal(retained, 'payload_removed');
    assert.equal(codeOf({ status: 'delivered' }, operatorPause), 'delivered');
    assert.equal(codeOf({ status: 'terminated' }), 'cancelled');
    assert.equal(codeOf({ queuedBehind: { webhookId: 'w', sequence: 1 } }, operatorPause), 'queued_behind');
    // Not yet attempted while the gate is closed: its claim will be held, so the hold explains it.
    assert.equal(codeOf({}, breaker), 'breaker_open');
    // Waiting on its retry timer: the retry explains it, and the text says the gate will hold it.
    const waiting = explain({ claimedAttempt: 1, attempts: [failed503] }, partnerPause);
    assert.equal(waiting.code, 'retry_scheduled');
    assert.match(waiting.text, /When it comes, paused_by_partner holds it\.$/);
    // An attempt under way is sending, whatever the gate says since.
    assert.equal(codeOf({ claimedAttempt: 2, attempts: [failed503] }, operatorPause), 'sending');
  });

  it('maps stored error classes to the partner words', () => {
    const failure = (error_class: any, http_status: number | null = null) => ({
      succeeded: false,
      http_status,
      error_class,
    });
    assert.equal(partnerErrorClass(failure('connection_refused')), 'connect');
    for (const same of ['dns', 'tls', 'timeout', 'reset', 'other'] as const)
      assert.equal(partnerErrorClass(failure(same)), same);
    assert.equal(partnerErrorClass(failure(null, 500)), 'http');
    assert.equal(partnerErrorClass({ succeeded: true, http_status: 204, error_class: null }), null);
  });
});
