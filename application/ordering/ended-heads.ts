import type { Knex } from 'knex';
import { erasedInFlightBoundMs } from '../../lib/delivery';
import { orderingGaps } from '../../lib/metrics';
import { settlePlace, type StalledHead } from '../../store/ordering/lanes';
import { storeEndOfRun } from '../../store/webhooks/attempt-record';
import type { RunEnd, TemporalGateway } from '../../temporal/gateway';

// An ordered webhook whose own code will settle its place no more: its run ended without settling it (stopped
// from outside, a claim PostgreSQL rejected, a workflow error), or an erasure cancelled it. The ordering sweep,
// `ordering skip` and a cancel of an ended run settle it here.

export interface EndedHeadDependencies {
  readonly knex: Knex;
  readonly gateway: Pick<TemporalGateway, 'runState' | 'wakeInOrder'>;
  /** erasedInFlightBoundMs of the deployment's PARTNER_TIMEOUT_MS. */
  readonly erasedInFlightAfterMs?: number;
}

/** What a run's end records on a row that has no final status yet: an end from outside, or its attempts' word. */
const stoppedBy = (end: RunEnd): 'cancelled' | 'terminated' | undefined =>
  end === 'cancelled' ? 'cancelled' : end === 'terminated' || end === 'timed_out' ? 'terminated' : undefined;

/**
 * Settles `head`'s place when nothing else will, and wakes the next webhook of its key. An erased head settles
 * once no attempt of it can still be in flight. Any other asks Temporal (one describe): a run that ended in any
 * state records its end (storeEndOfRun) and settles, a gap unless it delivered; a running or absent one is left
 * alone. `settled` says whether its place is settled now; `woke`, the workflow id of the next webhook when it
 * took the wake.
 */
export async function settleEndedHead(
  { knex, gateway, erasedInFlightAfterMs = erasedInFlightBoundMs() }: EndedHeadDependencies,
  head: Pick<StalledHead, 'webhookId' | 'workflowId'> & Partial<Pick<StalledHead, 'erased' | 'erasedInFlightForMs'>>,
): Promise<{ settled: boolean; woke?: string }> {
  let delivered = false;
  if (head.erasedInFlightForMs !== undefined) {
    if (head.erasedInFlightForMs < erasedInFlightAfterMs) return { settled: false };
  } else if (!head.erased) {
    const run = await gateway.runState(head.workflowId);
    if (run.kind !== 'ended') return { settled: false };
    const status = await storeEndOfRun(
      knex,
      { webhookId: head.webhookId, workflowId: head.workflowId, runId: run.runId },
      stoppedBy(run.end),
      run.closedAt,
    );
    delivered = status === 'delivered';
  }
  const { gapRecorded, next } = await settlePlace(knex, head.webhookId, !delivered);
  if (gapRecorded) orderingGaps.inc();
  // A wake that fails is sent again by the sweep: the next webhook is then queued with nothing ahead.
  const woken = next !== undefined && (await gateway.wakeInOrder(next.workflowId).catch(() => false));
  return { settled: true, ...(woken && { woke: next.workflowId }) };
}
