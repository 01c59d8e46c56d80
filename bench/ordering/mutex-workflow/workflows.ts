import {
  condition,
  continueAsNew,
  defineSignal,
  getExternalWorkflowHandle,
  proxyLocalActivities,
  setHandler,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { OrderingActivities } from './activities';
import { LOCK_ACQUIRED, LOCK_REQUESTED, type LockGrant, type LockRequest, type OrderingItemInput } from './shared';

// The bundle's entry point: only workflow code may be exported from here.
//
// A minimal version of temporalio/samples-typescript's `mutex` sample: one lock workflow per key takes requests
// by signal, grants them one at a time by signalling the requester, and waits for the requester's release
// signal (or the lock timeout). As in the service, the activities are local ones (the cheapest form, and the one
// the bare baseline and the service's delivery use); the sample's are regular activities, which would add
// three events and an action each.

const { requestLock, simulatePost } = proxyLocalActivities<OrderingActivities>({ startToCloseTimeout: '30 seconds' });

const lockRequested = defineSignal<[LockRequest]>(LOCK_REQUESTED);
const lockAcquired = defineSignal<[LockGrant]>(LOCK_ACQUIRED);

/** The sample's bound on one run's history before it continues as new with the requests still queued. */
const MAX_LOCK_HISTORY = 2000;

/**
 * The lock of one key. Unlike the sample, which waits for requests forever, it completes once its queue is
 * empty (one open workflow per entity forever is no option); a request that arrives meanwhile makes the server
 * refuse the completion, and one that arrives later signal-with-starts a new run.
 */
export async function mutexLock(pending: LockRequest[] = []): Promise<void> {
  const requests = [...pending];
  setHandler(lockRequested, (request) => void requests.push(request));
  while (requests.length > 0) {
    if (workflowInfo().historyLength >= MAX_LOCK_HISTORY) await continueAsNew<typeof mutexLock>(requests);
    const { itemId, timeoutMs } = requests.shift()!;
    const release = defineSignal(`release-${uuid4()}`);
    let released = false;
    setHandler(release, () => void (released = true));
    await getExternalWorkflowHandle(itemId).signal(lockAcquired, { releaseSignal: release.name });
    // As in the sample: past the timeout the next item gets the lock, whether or not this one is done.
    await condition(() => released, timeoutMs);
    setHandler(release, undefined);
  }
}

/** An item under the mutex: signal-with-start the key's lock, wait for the grant, POST, release. */
export async function mutexItem(input: OrderingItemInput): Promise<void> {
  let grant: LockGrant | undefined;
  setHandler(lockAcquired, (g) => void (grant = g));
  await requestLock(input);
  await condition(() => grant !== undefined);
  await simulatePost(input);
  await getExternalWorkflowHandle(input.lockWorkflowId).signal(defineSignal(grant!.releaseSignal));
}

/** The baseline: the same item with no lock, one local activity. */
export async function bareItem(input: OrderingItemInput): Promise<void> {
  await simulatePost(input);
}
