import { ApplicationFailure, continueAsNew, proxyActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { ErasureActivities } from '../activities/erasure';
import { recordsTaskQueue, type EraseSubjectInput, type ErasureSummary } from './types';

/** How often the erasure asks Temporal whether its deleted runs are gone (deletion is asynchronous). */
const GONE_CHECK_INTERVAL = '5 seconds';
/** Checks between two rounds of deletes of the runs still there (every 2 minutes). */
const CHECKS_PER_DELETE_ROUND = 24;
/** Checks before the erasure gives up (30 minutes) and stays pending, for an operator to look at. */
const MAX_GONE_CHECKS = 360;

/**
 * Erases one subject's webhooks (the erasures row it is started for names the subject's HMAC and company):
 * the subject index completed for older rows, then one transaction that cancels, removes and records
 * (store/erasure-steps.ts), then every recorded run deleted from Temporal and waited for until Temporal no
 * longer knows it, then the record completed. All I/O is in the activities, each idempotent, so a crash
 * anywhere resumes from the history and the record.
 */
export async function eraseSubject(input: EraseSubjectInput): Promise<ErasureSummary> {
  const { erasureId } = input;
  const act = proxyActivities<ErasureActivities>({
    taskQueue: recordsTaskQueue(workflowInfo().taskQueue),
    startToCloseTimeout: '2 minutes',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
  });

  for (let cursor = await act.indexUnindexedWebhooks(input.indexedUpTo ?? null); cursor !== null; cursor = await act.indexUnindexedWebhooks(cursor)) {
    if (workflowInfo().continueAsNewSuggested) await continueAsNew<typeof eraseSubject>({ ...input, indexedUpTo: cursor });
  }
  const counts = await act.eraseSubjectWebhooks(erasureId);
  let deleted = await act.deleteErasureRuns(erasureId, false);
  while (deleted.more) deleted = await act.deleteErasureRuns(erasureId, false);
  for (let check = 1; (await act.checkErasureRunsGone(erasureId)) > 0; check++) {
    if (check >= MAX_GONE_CHECKS) {
      throw ApplicationFailure.nonRetryable('runs deleted 30 minutes ago are still known to Temporal: the erasure stays pending', 'ErasureRunsRemain');
    }
    if (check % CHECKS_PER_DELETE_ROUND === 0) await act.deleteErasureRuns(erasureId, true);
    await sleep(GONE_CHECK_INTERVAL);
  }
  await act.completeErasure(erasureId);
  return { erasureId, ...counts, runsDeleted: deleted.runsDeleted };
}
