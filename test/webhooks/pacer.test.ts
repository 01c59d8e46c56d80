import assert from 'node:assert/strict';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { createPacer } from '../../activities/pacer';

describe('createPacer (PARTNER_MAX_PER_SECOND per worker process)', () => {
  it('lets the first call through at once and spaces the next ones at least 1000/perSecond ms apart', async () => {
    const awaitSlot = createPacer(20);
    const started = performance.now();
    const first = await Promise.race([awaitSlot().then(() => 'slot'), nextTurn().then(() => 'next turn')]);
    assert.equal(first, 'slot', 'the first call waits for no timer');
    const times = await Promise.all(Array.from({ length: 4 }, () => awaitSlot().then(() => performance.now())));
    // Timers may fire late, never early: call k waits until at least k × 50 ms after the first.
    times.forEach((t, i) => assert.ok(t - started >= (i + 1) * 50 - 2, `call ${i + 2} after ${(t - started).toFixed(1)} ms`));
  });
});
