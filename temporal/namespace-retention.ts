import type { WorkflowService } from '@temporalio/client';

/** How long the namespace keeps a closed run, in seconds (DescribeNamespace); undefined when Temporal does not say. */
export async function readNamespaceRetention(service: WorkflowService, namespace: string): Promise<number | undefined> {
  const answer = await service.describeNamespace({ namespace });
  const ttl = answer.config?.workflowExecutionRetentionTtl;
  return ttl?.seconds ? Number(ttl.seconds.toString()) : undefined;
}
