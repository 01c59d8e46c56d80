import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { BareActivities, BareDeliveryInput } from './activities';

// Design (A), "a queue of the partner's own": the bare workflow with its POST as a regular activity on the
// activity task queue `<workflow task queue>-partner`, which the server caps (task-queue config --queue-rps-limit).
// Same workflow type name as bench/bare-workflow/workflows.ts, so floor-bare's deliver() starts either one.

/** One regular activity on the partner's queue, then complete. */
export async function bareDelivery(input: BareDeliveryInput): Promise<void> {
  const { postEnvelope } = proxyActivities<BareActivities>({ startToCloseTimeout: '30 seconds', allowEagerDispatch: false, taskQueue: `${workflowInfo().taskQueue}-partner` });
  await postEnvelope(input);
}
