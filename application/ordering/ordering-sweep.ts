import { setTimeout as delay } from 'node:timers/promises';
import type { Knex } from 'knex';
import type { Logger } from '../../lib/logger';
import { inParallel } from '../../lib/in-parallel';
import { orderingWakes } from '../../lib/metrics';
import { lostWakes, stalledHeads, type SweepCursor } from '../../store/ordering/lanes';
import type { TemporalGateway } from '../../temporal/gateway';
import { settleEndedHead } from './ended-heads';

/** How long a queued webhook with nothing ahead waits for its wake before the sweep sends it again. */
export const LOST_WAKE_AFTER_MS = 30_000;
/** How often every worker looks. */
export const SWEEP_INTERVAL_MS = 15_000;
/** Queued places one pass walks (one statement), so at most this many heads are described per pass. */
export const SWEEP_WALK_STEP = 200;
const SWEEP_BATCH = 200;
const WAKE_CONCURRENCY = 8;

export interface OrderingSweepDependencies {
  readonly knex: Knex;
  readonly logger: Logger;
  readonly gateway: Pick<TemporalGateway, 'wakeInOrder' | 'runState'>;
  /** erasedInFlightBoundMs of the deployment's PARTNER_TIMEOUT_MS (lib/delivery.ts). */
  readonly erasedInFlightAfterMs?: number;
}

/** Where a worker's walk over queued places stands between passes; null: at the oldest. */
export interface SweepWalk {
  cursor: SweepCursor | null;
}

/**
 * Two looks for a key that does not move:
 * - the next SWEEP_WALK_STEP queued places after the walk's cursor, oldest wait first, and the head of each
 *   lane among them: a head whose run ended in any state without settling its place (stopped in Temporal, a
 *   claim PostgreSQL rejected, a workflow error), or an erased head whose attempt is over, settles
 *   (settleEndedHead), and the next webhook of its key is woken. The cursor goes round, so every stalled head is
 *   looked at once per round of ceil(queued places / SWEEP_WALK_STEP) passes, whatever the backlog;
 * - a queued webhook with nothing unsettled ahead lost its wake (a worker gone between settling and
 *   signalling, Temporal unreachable, a row ahead removed): it is woken again, or settled when its own run
 *   ended while it was queued. A wake is harmless twice: the delivery asks its lane again.
 * Returns how many heads it settled and how many webhooks it woke.
 */
export async function sweepOrdering(
  deps: OrderingSweepDependencies,
  waitedMs = LOST_WAKE_AFTER_MS,
  walk: SweepWalk = { cursor: null },
): Promise<{ settled: number; woken: number }> {
  const { knex, gateway } = deps;
  let settled = 0;
  const woken = new Set<string>();
  const count = (result: { settled: boolean; woke?: string }) => {
    if (result.settled) settled++;
    if (result.woke !== undefined) woken.add(result.woke);
  };
  const { heads, next } = await stalledHeads(knex, waitedMs, walk.cursor, SWEEP_WALK_STEP);
  walk.cursor = next;
  await inParallel(heads.length, WAKE_CONCURRENCY, async (i) => count(await settleEndedHead(deps, heads[i])));
  const batch = await lostWakes(knex, waitedMs, SWEEP_BATCH);
  await inParallel(batch.length, WAKE_CONCURRENCY, async (i) => {
    if (woken.has(batch[i].workflowId)) return;
    if (await gateway.wakeInOrder(batch[i].workflowId)) woken.add(batch[i].workflowId);
    // No running run took the wake: one that ended while queued settles, so its key goes on.
    else count(await settleEndedHead(deps, batch[i]));
  });
  if (woken.size) orderingWakes.inc({ source: 'sweep' }, woken.size);
  return { settled, woken: woken.size };
}

/** The loop every worker runs while it polls; PostgreSQL or Temporal trouble is logged once and tried again. */
export async function runOrderingSweep(deps: OrderingSweepDependencies, stop: AbortSignal): Promise<void> {
  let lastFailure = '';
  const walk: SweepWalk = { cursor: null };
  while (!stop.aborted) {
    try {
      const { settled, woken } = await sweepOrdering(deps, LOST_WAKE_AFTER_MS, walk);
      if (settled)
        deps.logger.warn(
          { settled },
          'ordering keys whose head ended without settling go on: each head is recorded as its run ended, a gap ' +
            'unless delivered',
        );
      if (woken) deps.logger.warn({ woken }, 'queued webhooks whose wake was lost were woken by the ordering sweep');
      lastFailure = '';
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (message !== lastFailure)
        deps.logger.warn({ err: error }, 'the ordering sweep could not look for lost wakes; it tries again');
      lastFailure = message;
    }
    await delay(SWEEP_INTERVAL_MS, undefined, { signal: stop }).catch(() => undefined);
  }
}
