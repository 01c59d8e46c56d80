import { setTimeout as delay } from 'node:timers/promises';

/**
 * Spaces the calls of this process at least 1000/perSecond ms apart (PARTNER_MAX_PER_SECOND). The POSTs run
 * as local activities, which Temporal's task-queue rate limit does not cover, so each worker paces its own.
 */
export function createPacer(perSecond: number): () => Promise<void> {
  const spacingMs = 1000 / perSecond;
  let nextSlot = 0;
  return async function awaitSlot() {
    const now = performance.now();
    const slot = Math.max(now, nextSlot);
    nextSlot = slot + spacingMs;
    if (slot > now) await delay(slot - now);
  };
}
