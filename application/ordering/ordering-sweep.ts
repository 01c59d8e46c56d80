import { setTimeout as delay } from 'node:timers/promises';
import type { Knex } from 'knex';
import type { Logger } from '../../lib/logger';
import { inParallel } from '../../lib/in-parallel';
import { orderingGaps, orderingWakes } from '../../lib/metrics';
import { lostWakes, settlePlace, stalledHeads } from '../../store/ordering/lanes';
import { storeOutcome } from '../../store/webhooks/attempt-record';
import type { TemporalGateway } from '../../temporal/gateway';

/** How long a queued webhook with nothing ahead waits for its wake before the sweep sends it again. */
export const LOST_WAKE_AFTER_MS = 30_000;
/** How often every worker looks. */
const SWEEP_INTERVAL_MS = 15_000;
const SWEEP_BATCH = 200;
const WAKE_CONCURRENCY = 8;

export interface OrderingSweepDependencies {
  readonly knex: Knex;
  readonly logger: Logger;
  readonly gateway: Pick<TemporalGateway, 'wakeInOrder' | 'status'>;
}

/**
 * Two looks for a key that does not move:
 * - a head whose run was stopped in Temporal (terminated or cancelled outside the service, timed out) ran no
 *   code to settle its place: its outcome is recorded and its place settles, leaving a gap;
 * - a queued webhook with nothing unsettled ahead lost its wake (a worker gone between settling and
 *   signalling, Temporal unreachable, a row ahead removed): it is woken again. A wake is harmless twice: the
 *   delivery asks its lane again.
 * Returns how many heads it settled and how many webhooks it woke.
 */
export async function sweepOrdering({ knex, gateway }: OrderingSweepDependencies, waitedMs = LOST_WAKE_AFTER_MS): Promise<{ settled: number; woken: number }> {
  let settled = 0;
  const heads = await stalledHeads(knex, waitedMs, SWEEP_BATCH);
  await inParallel(heads.length, WAKE_CONCURRENCY, async (i) => {
    const head = heads[i];
    const lookup = await gateway.status(head.workflowId);
    if (lookup.kind !== 'stopped') return;
    await storeOutcome(knex, { webhook: { ...head, runId: lookup.runId }, status: lookup.status, finishedAt: lookup.closedAt });
    if ((await settlePlace(knex, head.webhookId, true)).gapRecorded) orderingGaps.inc();
    settled++;
  });
  const batch = await lostWakes(knex, settled ? 0 : waitedMs, SWEEP_BATCH);
  let woken = 0;
  await inParallel(batch.length, WAKE_CONCURRENCY, async (i) => {
    if (await gateway.wakeInOrder(batch[i].workflowId)) woken++;
  });
  if (woken) orderingWakes.inc({ source: 'sweep' }, woken);
  return { settled, woken };
}

/** The loop every worker runs while it polls; PostgreSQL or Temporal trouble is logged once and tried again. */
export async function runOrderingSweep(deps: OrderingSweepDependencies, stop: AbortSignal): Promise<void> {
  let lastFailure = '';
  while (!stop.aborted) {
    try {
      const { settled, woken } = await sweepOrdering(deps);
      if (settled) deps.logger.warn({ settled }, 'ordering keys whose head was stopped in Temporal go on: each head is recorded as stopped, leaving a gap');
      if (woken) deps.logger.warn({ woken }, 'queued webhooks whose wake was lost were woken by the ordering sweep');
      lastFailure = '';
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (message !== lastFailure) deps.logger.warn({ err: error }, 'the ordering sweep could not look for lost wakes; it tries again');
      lastFailure = message;
    }
    await delay(SWEEP_INTERVAL_MS, undefined, { signal: stop }).catch(() => undefined);
  }
}
