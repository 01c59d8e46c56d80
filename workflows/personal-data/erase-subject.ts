import { continueAsNew, proxyActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { ErasureActivities } from '../../activities/personal-data/erasure';
import { recordsTaskQueue, type EraseSubjectInput, type ErasureSummary } from '../types';

/**
 * How often the erasure sweeps Temporal in its first 15 minutes (deletion is asynchronous, starts settle within ~75 s).
 */
const SWEEP_INTERVAL = '5 seconds';
/**
 * Sweeps at that pace (15 minutes); after them an erasure is overdue (the ErasureOverdue alert) and sweeps every
 * minute.
 */
const QUICK_SWEEPS = 180;
const SLOW_SWEEP_INTERVAL = '1 minute';

/**
 * Erases one subject's webhooks (the erasures row it is started for names the subject's HMACs and company):
 * the subject index completed for older rows, then one transaction that cancels, removes and records
 * (store/personal-data/erasure-steps.ts), then sweeps until Temporal serves no run of any of their workflow ids and
 * every start is settled, and until no lane of the subject holds its key, then the record completed. A workflow id
 * counts as gone at its second quiet look, 30 s or more after the first (the sweep activity keeps the first on the
 * record): these timers wait out the pause. It never gives up: a pending erasure says why on its record.
 * All I/O is in the activities, each idempotent, so a crash anywhere resumes from the history and the record.
 */
export async function eraseSubject(input: EraseSubjectInput): Promise<ErasureSummary> {
  const { erasureId } = input;
  const act = proxyActivities<ErasureActivities>({
    taskQueue: recordsTaskQueue(workflowInfo().taskQueue),
    startToCloseTimeout: '2 minutes',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
  });

  if (!input.sweeping) {
    for (
      let cursor = await act.indexUnindexedWebhooks(input.indexedUpTo ?? null);
      cursor !== null;
      cursor = await act.indexUnindexedWebhooks(cursor)
    ) {
      if (workflowInfo().continueAsNewSuggested)
        await continueAsNew<typeof eraseSubject>({ ...input, indexedUpTo: cursor });
    }
  }
  // Idempotent: after a continue-as-new it returns the counts the record holds.
  const counts = await act.eraseSubjectWebhooks(erasureId);
  let sweeps = input.sweeps ?? 0;
  let sweep = await act.sweepErasureRuns(erasureId);
  while (sweep.left > 0) {
    await sleep(++sweeps < QUICK_SWEEPS ? SWEEP_INTERVAL : SLOW_SWEEP_INTERVAL);
    if (workflowInfo().continueAsNewSuggested)
      await continueAsNew<typeof eraseSubject>({ erasureId, sweeping: true, sweeps });
    sweep = await act.sweepErasureRuns(erasureId);
  }
  await act.completeErasure(erasureId);
  return { erasureId, ...counts, runsDeleted: sweep.runsDeleted };
}
