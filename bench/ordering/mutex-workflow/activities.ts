import { setTimeout as delay } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { LOCK_REQUESTED, LOCK_WORKFLOW, type LockRequest, type OrderingItemInput } from './shared';

export interface OrderingActivities {
  /** Signal-with-start of the key's lock workflow (a workflow cannot do it itself: the sample does it in an activity too). */
  requestLock(input: OrderingItemInput): Promise<void>;
  /** The POST, simulated: resolves after 0 to 5 ms. */
  simulatePost(input: OrderingItemInput): Promise<void>;
}

/** What the bench watches of the simulated POSTs: when each starts and ends. */
export interface PostObserver {
  postStarted(input: OrderingItemInput): void;
  postEnded(input: OrderingItemInput): void;
}

export function orderingActivities(client: Client, observer: PostObserver): OrderingActivities {
  return {
    async requestLock({ itemId, lockWorkflowId, taskQueue, lockTimeoutMs }) {
      const request: LockRequest = { itemId, timeoutMs: lockTimeoutMs };
      await client.workflow.signalWithStart(LOCK_WORKFLOW, {
        workflowId: lockWorkflowId,
        taskQueue,
        args: [[]],
        signal: LOCK_REQUESTED,
        signalArgs: [request],
      });
    },
    async simulatePost(input) {
      observer.postStarted(input);
      await delay(Math.random() * 5);
      observer.postEnded(input);
    },
  };
}
