import { continueAsNew, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { RetentionActivities } from '../../activities/personal-data/retention';
import { recordsTaskQueue } from '../types';
import type { RetentionInput, RetentionSummary } from '../../lib/retention';

/** How long one purge activity runs batches before it hands back; it heartbeats after every batch. */
export const PURGE_CALL_BUDGET_MS = 60_000;

/** Purge calls per run before it continues as new, so a big backlog never grows one history past ~300 events. */
export const PURGE_CALLS_PER_RUN = 100;

/**
 * One retention run, started by the schedule: record the run, purge in bounded activity calls until nothing is
 * due, then close the record. The activities run on the records queue, beside the other PostgreSQL writes.
 */
export async function webhookRetention(input: RetentionInput): Promise<RetentionSummary> {
  const { startRetentionRun, purgeDueWebhooks, finishRetentionRun } = proxyActivities<RetentionActivities>({
    taskQueue: recordsTaskQueue(workflowInfo().taskQueue),
    startToCloseTimeout: PURGE_CALL_BUDGET_MS + 60_000,
    // A batch takes milliseconds: a silent activity is a lost worker, and another one takes over.
    heartbeatTimeout: '30 seconds',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
  });
  const { batchSize, budgetMs = PURGE_CALL_BUDGET_MS, callsPerRun = PURGE_CALLS_PER_RUN } = input.limits ?? {};
  const run = input.run ?? (await startRetentionRun({ trigger: input.trigger }));
  for (let call = 0; call < callsPerRun; call++) {
    const progress = await purgeDueWebhooks({ run, budgetMs, ...(batchSize !== undefined && { batchSize }) });
    if (progress.done) return finishRetentionRun({ runId: run.runId });
  }
  return continueAsNew<typeof webhookRetention>({ ...input, run });
}
