import type { Client } from '@temporalio/client';
import { RETENTION_WORKFLOW_TYPE } from '../../lib/retention';
import { eventually } from './eventually';

/**
 * Waits until each of these workflows' runs is completed, as its own mutable state says (describe), not
 * visibility, which lags it on a busy machine; then until visibility lists no other run on `queue`. The hourly
 * retention run is not counted: a drill that spans the top of an hour sees one. A timeout names a few runs that
 * are not completed and what their state is.
 */
export async function waitForRunsCompleted(
  client: Client,
  queue: string,
  workflowIds: readonly string[],
  timeoutMs: number,
): Promise<void> {
  let pending = [...workflowIds];
  const deadline = Date.now() + timeoutMs;
  await eventually(
    'every run completed',
    async () => {
      pending = await notCompleted(client, pending);
      return pending.length === 0;
    },
    timeoutMs,
  ).catch(async (error: Error) => {
    const states = await Promise.all(pending.slice(0, 5).map((workflowId) => runState(client, workflowId)));
    throw new Error(
      `${error.message}: ${pending.length} of ${workflowIds.length} are not, such as ${JSON.stringify(states)}`,
    );
  });
  const listed = async () =>
    (await client.workflow.count(`TaskQueue = "${queue}" AND WorkflowType != "${RETENTION_WORKFLOW_TYPE}"`)).count;
  await eventually(
    `visibility to list ${workflowIds.length} runs`,
    async () => (await listed()) === workflowIds.length,
    Math.max(1_000, deadline - Date.now()),
  ).catch(async (error: Error) => {
    throw new Error(`${error.message}: it lists ${await listed()}`);
  });
}

/** The workflows among these whose run is not completed, asking 16 at a time. */
async function notCompleted(client: Client, workflowIds: readonly string[]): Promise<string[]> {
  const open: string[] = [];
  for (let i = 0; i < workflowIds.length; i += 16) {
    const batch = workflowIds.slice(i, i + 16);
    const states = await Promise.all(
      batch.map(async (workflowId) => (await client.workflow.getHandle(workflowId).describe()).status.name),
    );
    open.push(...batch.filter((_, j) => states[j] !== 'COMPLETED'));
  }
  return open;
}

async function runState(client: Client, workflowId: string): Promise<unknown> {
  const handle = client.workflow.getHandle(workflowId);
  const { status, historyLength, raw } = await handle.describe();
  const events = (await handle.fetchHistory()).events ?? [];
  return {
    workflowId,
    status: status.name,
    historyLength,
    pendingWorkflowTask: raw.pendingWorkflowTask?.state ?? null,
    pendingActivities: raw.pendingActivities?.length ?? 0,
    lastEvents: events.slice(-4).map((e) => e.eventType),
  };
}
