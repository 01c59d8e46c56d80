import { status as GrpcStatus } from '@grpc/grpc-js';
import type { WorkflowService } from '@temporalio/client';
import { grpcCodeOf } from './grpc-refusal';

// Deleting a workflow id's runs from Temporal, history included, and telling when Temporal serves none of them
// any more. Deletion is asynchronous and its phases are not atomic: a run answers NOT_FOUND by its run id while
// the workflow id still describes it, and a list still shows it (../shared/notes/trust-and-ordering.md). So
// "gone" is asked three ways (describe, list and history read, each by workflow id), every run one of them still
// shows is deleted again, and one quiet look is not enough: the caller looks again after DELETION_PHASES_MS.

/** Runs one list asks for; a delivery's workflow id has one run, a reset or two more. */
const LIST_PAGE = 100;

/**
 * How long a workflow id must stay quiet (no run described, listed or read) before it counts as gone: Temporal's
 * deletion runs as tasks of the history service, retried with backoff, and a workflow id was seen quiet and then
 * served again for about 4 s; the longest gap measured between two phases is 20 s (docs/decisions.md, "A workflow
 * id is gone after a second quiet look").
 */
export const DELETION_PHASES_MS = 30_000;

/** The result of a call, or undefined when Temporal answers that it knows no such run (NOT_FOUND). */
const unlessNotFound = <T>(call: Promise<T>): Promise<T | undefined> =>
  call.catch((error: unknown) => {
    if (grpcCodeOf(error) === GrpcStatus.NOT_FOUND) return undefined;
    throw error;
  });

/** A visibility query's string literal (workflow ids are the service's own, but a quote must never end it). */
const queryLiteral = (text: string) => `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/**
 * Deletes every run of `workflowId` that Temporal still serves (a running one is terminated first) and returns
 * how many it found: 0 means quiet, by workflow id, in a list and in a history read alike. Idempotent: a run
 * being deleted already is asked again. A history that answers without a describe names no run id: the current
 * run is deleted by workflow id.
 */
export async function deleteEveryRun(service: WorkflowService, namespace: string, workflowId: string): Promise<number> {
  const listed = await service.listWorkflowExecutions({
    namespace,
    pageSize: LIST_PAGE,
    query: `WorkflowId = ${queryLiteral(workflowId)}`,
  });
  const runIds = new Set(
    (listed.executions ?? []).map((run) => run.execution?.runId).filter((runId): runId is string => Boolean(runId)),
  );
  const current = await unlessNotFound(service.describeWorkflowExecution({ namespace, execution: { workflowId } }));
  const currentRunId = current?.workflowExecutionInfo?.execution?.runId;
  if (current) runIds.add(currentRunId ?? '');
  const history = await unlessNotFound(
    service.getWorkflowExecutionHistory({ namespace, execution: { workflowId }, maximumPageSize: 1 }),
  );
  if (history && !current) runIds.add('');
  for (const runId of runIds) {
    await unlessNotFound(
      service.deleteWorkflowExecution({ namespace, workflowExecution: { workflowId, ...(runId && { runId }) } }),
    );
  }
  return runIds.size;
}

/** Deletes one run (the run of a webhook found erased): NOT_FOUND counts as done. */
export async function deleteRun(
  service: WorkflowService,
  namespace: string,
  workflowId: string,
  runId: string,
): Promise<void> {
  await unlessNotFound(service.deleteWorkflowExecution({ namespace, workflowExecution: { workflowId, runId } }));
}
