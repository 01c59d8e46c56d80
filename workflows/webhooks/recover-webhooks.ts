import { continueAsNew, proxyActivities, workflowInfo } from '@temporalio/workflow';
import { recordsTaskQueue, type RecoverWebhooksInput, type RecoveryActivities, type RecoverySummary } from '../types';

/**
 * A partner's recovery (partner_recoveries): one activity per batch, each writing a batch of redeliveries and
 * starting their deliveries, until the recovery has ended (every item started, or a cancel). The progress is the
 * recovery's row, so the workflow keeps no state but counts: a worker lost mid-batch retries the batch, which writes
 * and starts nothing twice (application/webhooks/recovery-batches.ts).
 */
export async function recoverWebhooks(input: RecoverWebhooksInput): Promise<RecoverySummary> {
  const { runRecoveryBatch } = proxyActivities<RecoveryActivities>({
    taskQueue: recordsTaskQueue(workflowInfo().taskQueue),
    startToCloseTimeout: '5 minutes',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
  });
  let batches = input.batches ?? 0;
  let started = input.started ?? 0;
  for (;;) {
    const batch = await runRecoveryBatch(input.recoveryId);
    batches++;
    started += batch.started;
    if (batch.ended) return { recoveryId: input.recoveryId, batches, started, ended: batch.ended };
    if (workflowInfo().continueAsNewSuggested)
      await continueAsNew<typeof recoverWebhooks>({ recoveryId: input.recoveryId, batches, started });
  }
}
