import { randomUUID } from 'node:crypto';
import { status as GrpcStatus } from '@grpc/grpc-js';
import type { WorkflowService } from '@temporalio/client';
import { grpcCodeOf } from './grpc-refusal';
import { orderingTurnSignal } from '../workflows/webhooks/messages';

/**
 * Wakes a queued ordered delivery: the webhook ahead of it settled. True when Temporal took the signal; false
 * when it knows no running workflow of that id (not started yet: its first attempt will find the lane clear;
 * or ended already). The signal carries nothing, so it needs no payload codec.
 */
export async function wakeInOrder(
  service: WorkflowService,
  namespace: string,
  workflowId: string,
  identity: string,
): Promise<boolean> {
  try {
    await service.signalWorkflowExecution({
      namespace,
      workflowExecution: { workflowId },
      signalName: orderingTurnSignal.name,
      identity,
      requestId: randomUUID(),
    });
    return true;
  } catch (error) {
    if (grpcCodeOf(error) === GrpcStatus.NOT_FOUND) return false;
    throw error;
  }
}
