// Names and shapes shared by the mutex bench's workflows (bundled) and its host side: no imports, so both can load it.

/** An item: one simulated delivery of an entity's webhook, ordered by `key` (an entity) under the mutex. */
export interface OrderingItemInput {
  readonly itemId: string;
  readonly key: string;
  /** The lock workflow's id for `key` (the mutex variant only). */
  readonly lockWorkflowId: string;
  /** The item's task queue: the lock workflow is signal-with-started on it. */
  readonly taskQueue: string;
  /** How long the lock waits for a release before it grants the next item (the samples' lock timeout). */
  readonly lockTimeoutMs: number;
}

/** Item → lock, by signal-with-start: queue me. */
export interface LockRequest {
  readonly itemId: string;
  readonly timeoutMs: number;
}

/** Lock → item: you hold the lock; release it by signalling `releaseSignal` (a fresh name per grant, as in the sample). */
export interface LockGrant {
  readonly releaseSignal: string;
}

export const LOCK_REQUESTED = 'lockRequested';
export const LOCK_ACQUIRED = 'lockAcquired';
export const LOCK_WORKFLOW = 'mutexLock';
