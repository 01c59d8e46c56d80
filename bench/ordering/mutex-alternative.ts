import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import { inParallel } from '../../lib/in-parallel';
import { createLogger } from '../../lib/logger';
import { quietBundler } from '../../worker/bundle';
import { installTemporalRuntime } from '../../worker/temporal-runtime';
import { countActions } from '../harness/history';
import { startBenchTemporal, temporalVersion } from '../harness/temporal';
import { orderingActivities } from './mutex-workflow/activities';
import { LOCK_ACQUIRED, type OrderingItemInput } from './mutex-workflow/shared';
import type { bareItem, mutexItem } from './mutex-workflow/workflows';

/**
 * The alternative to the service's lanes, measured: Temporal's mutex sample (a lock workflow per key; each item
 * signal-with-starts it, the lock signals "acquired", the item signals "release"), against the same item with no
 * lock. Each measurement runs on a fresh dev server (throughput falls as its database fills), with the worker and
 * client in this process, and counts the events of Temporal's own histories: the items' and every run of every
 * lock workflow they were granted by.
 *
 * The sample's lock grants in the order the requests reach it (each item's signal-with-start, from a local activity
 * once the item runs), not in the order the items were accepted: `outOfStartOrder` counts the pairs that swapped.
 * Its `condition(released, timeout)` starts a timer per grant, but for a release that arrives in the same workflow
 * task as the grant's confirmation (then the condition holds at once): so `timers` is 1 per item or a little under.
 *
 * The rates depend on this machine's load at the time: compare the mutex with the bare item side by side, from one
 * run, never with figures from another run. The event, signal and workflow-task counts do not depend on the load
 * (but for a lock timeout that fires, which `maxConcurrentPerKey` > 1 would show).
 */

const { EventType } = temporal.api.enums.v1;

/** Items started at once, as the floor's and the deliveries' benches start workflows. */
export const MUTEX_CONCURRENCY = 32;
/**
 * The two shapes worth comparing: every item on its own key (nothing to wait for), and every item on one key.
 * Small, so that both cases (four fresh dev servers) take 1 to 2 minutes on a busy 2-core machine: there the mutex
 * ran about 5 items/s over many keys and 4/s on one key (500 and 100 items took 3 min 45 s in all). The counts
 * per item do not depend on the sizes.
 */
export const MUTEX_CASES = [
  { name: 'many keys', items: 200, keys: 200 },
  { name: 'one key', items: 50, keys: 1 },
] as const;

export interface MutexAlternativeOptions {
  /** The `temporal` CLI (benchTemporalBinary()). */
  readonly executable: string;
  readonly items: number;
  /** Item i is on key i % keys. */
  readonly keys: number;
  progress(message: string): void;
  /** From mutexWorkflowBundle(), to bundle once for several calls; bundled here when omitted. */
  readonly workflowBundle?: { readonly code: string };
  /** Starts in flight at once (MUTEX_CONCURRENCY unless given). */
  readonly concurrency?: number;
  /** Items run (and not counted) on each fresh server before the measurement; 10 unless given. */
  readonly warmup?: number;
  /** The lock's timeout per grant, as in the sample; 30 s unless given (never reached by a 0–5 ms POST). */
  readonly lockTimeoutMs?: number;
}

/** Per item, summed over every history the items made (for the mutex: the items' and the lock runs'). */
export interface PerItemFigures {
  readonly events: number;
  /** Of `events`, those of the items' own histories. */
  readonly itemEvents: number;
  /** Of `events`, those of the lock workflows' histories, shared out over the items. */
  readonly lockEvents: number;
  /** Signals delivered (WorkflowExecutionSignaled events, each counted once, at the receiver). */
  readonly signals: number;
  /** WorkflowTaskCompleted events. */
  readonly workflowTasks: number;
  /** Workflow executions started (the item's own, and lock runs, continue-as-new included). */
  readonly starts: number;
  readonly localActivities: number;
  readonly timers: number;
  /** Temporal Cloud's billed actions as bench/harness/history.ts counts them (a signal counts at sender and receiver). */
  readonly actions: number;
}

export interface VariantFigures {
  readonly variant: 'mutex' | 'bare';
  readonly items: number;
  readonly keys: number;
  /** From the first start to the last POST's end. */
  readonly seconds: number;
  readonly itemsPerSecond: number;
  /** From the first start until every item workflow had closed. */
  readonly closedSeconds: number;
  /** Lock workflow runs that granted the items (0 for bare). */
  readonly lockRuns: number;
  readonly perItem: PerItemFigures;
  /** All events by type (EVENT_TYPE_ prefix dropped), per item. */
  readonly eventsPerItemByType: Readonly<Record<string, number>>;
  /** The most POSTs of one key in flight at once: 1 under a working lock. */
  readonly maxConcurrentPerKey: number;
  /** Pairs of one key's items whose POSTs began in the other order than the server accepted their starts. */
  readonly outOfStartOrder: number;
}

export interface MutexAlternativeFigures {
  readonly items: number;
  readonly keys: number;
  readonly concurrency: number;
  /** "CLI 1.9.1, Server 1.32.0, UI 2.54.1" */
  readonly temporal: string;
  readonly mutex: VariantFigures;
  readonly bare: VariantFigures;
}

/** The mutex bench's workflows bundled (webpack, 0.3 to 0.8 s); installs the SDK's quiet runtime first. */
export async function mutexWorkflowBundle(): Promise<{ code: string }> {
  // Before any NativeConnection: the default runtime logs to the console and takes over SIGINT/SIGTERM.
  installTemporalRuntime(createLogger('error'));
  return bundleWorkflowCode({ workflowsPath: require.resolve('./mutex-workflow/workflows'), logger: quietBundler });
}

/** One case (`items` over `keys`): the mutex, then the bare item, each on a fresh dev server. */
export async function measureMutexAlternative(options: MutexAlternativeOptions): Promise<MutexAlternativeFigures> {
  const workflowBundle = options.workflowBundle ?? (await mutexWorkflowBundle());
  const common = { ...options, workflowBundle, concurrency: options.concurrency ?? MUTEX_CONCURRENCY };
  const mutex = await measureVariant({ ...common, variant: 'mutex' });
  const bare = await measureVariant({ ...common, variant: 'bare' });
  return {
    items: options.items,
    keys: options.keys,
    concurrency: common.concurrency,
    temporal: temporalVersion(options.executable),
    mutex,
    bare,
  };
}

type VariantOptions = MutexAlternativeOptions & {
  variant: 'mutex' | 'bare';
  workflowBundle: { code: string };
  concurrency: number;
};

/** What the simulated POSTs showed: when each began and ended, and how many of a key ran at once. */
class PostLog {
  readonly began = new Map<string, number>();
  readonly ended = new Map<string, number>();
  private readonly inFlight = new Map<string, number>();
  maxConcurrentPerKey = 0;
  strays = 0;
  constructor(private readonly expected: ReadonlySet<string>) {}

  postStarted({ itemId, key }: OrderingItemInput) {
    if (!this.expected.has(itemId) || this.began.has(itemId)) return void this.strays++;
    this.began.set(itemId, performance.now());
    const n = (this.inFlight.get(key) ?? 0) + 1;
    this.inFlight.set(key, n);
    this.maxConcurrentPerKey = Math.max(this.maxConcurrentPerKey, n);
  }

  postEnded({ itemId, key }: OrderingItemInput) {
    if (!this.expected.has(itemId) || this.ended.has(itemId)) return;
    this.ended.set(itemId, performance.now());
    this.inFlight.set(key, this.inFlight.get(key)! - 1);
  }
}

async function measureVariant(options: VariantOptions): Promise<VariantFigures> {
  const { variant, progress } = options;
  const temporal = await startBenchTemporal(options.executable);
  const native = await NativeConnection.connect({ address: temporal.server.address }).catch(async (error: unknown) => {
    await temporal.stop();
    throw error;
  });
  try {
    const client = new Client({ connection: native });
    const taskQueue = `bench-mutex-${randomUUID()}`;
    // The activities report to whichever run is current (the warm-up's, then the measurement's).
    let log = new PostLog(new Set());
    const activities = orderingActivities(client, {
      postStarted: (input) => log.postStarted(input),
      postEnded: (input) => log.postEnded(input),
    });
    const worker = await Worker.create({
      connection: native,
      taskQueue,
      workflowBundle: options.workflowBundle,
      activities,
    });
    return await worker.runUntil(async () => {
      const run = async (prefix: string, items: number, keys: number) => {
        const inputs = Array.from({ length: items }, (_, i): OrderingItemInput => {
          const key = `${prefix}-key-${i % keys}`;
          return {
            itemId: `${prefix}-item-${i}`,
            key,
            lockWorkflowId: `${prefix}-lock-${i % keys}`,
            taskQueue,
            lockTimeoutMs: options.lockTimeoutMs ?? 30_000,
          };
        });
        log = new PostLog(new Set(inputs.map((input) => input.itemId)));
        return { inputs, log, ...(await runItems({ ...options, client, taskQueue, inputs, log })) };
      };
      const tag = Date.now().toString(36);
      const warmup = options.warmup ?? 10;
      if (warmup > 0) {
        progress(`ordering, mutex alternative (${variant}): warm-up, ${warmup} items`);
        await run(`warm-${tag}`, warmup, warmup);
      }
      progress(
        `ordering, mutex alternative (${variant}): ${options.items} items over ${options.keys} key(s), ${options.concurrency} starts at once`,
      );
      const measured = await run(`${variant}-${tag}`, options.items, options.keys);
      progress(`ordering, mutex alternative (${variant}): counting the histories`);
      const counted = await countHistories(
        client,
        measured.inputs.map((input) => input.itemId),
        options.concurrency,
      );
      return {
        variant,
        items: options.items,
        keys: options.keys,
        seconds: measured.seconds,
        itemsPerSecond: options.items / measured.seconds,
        closedSeconds: measured.closedSeconds,
        lockRuns: counted.lockRuns,
        perItem: perItem(counted, options.items),
        eventsPerItemByType: Object.fromEntries([...counted.byType].map(([type, n]) => [type, n / options.items])),
        maxConcurrentPerKey: measured.log.maxConcurrentPerKey,
        outOfStartOrder: outOfStartOrder(measured.inputs, measured.accepted, measured.log.began),
      };
    });
  } finally {
    await native.close();
    await temporal.stop();
  }
}

/** Starts the items, waits until each POSTed and every workflow closed; throws on a missing or repeated POST. */
async function runItems(
  o: VariantOptions & { client: Client; taskQueue: string; inputs: OrderingItemInput[]; log: PostLog },
) {
  const { client, inputs, log } = o;
  const accepted = new Map<string, number>();
  const first = performance.now();
  await inParallel(inputs.length, o.concurrency, async (i) => {
    const input = inputs[i];
    await client.workflow.start<typeof mutexItem | typeof bareItem>(o.variant === 'mutex' ? 'mutexItem' : 'bareItem', {
      workflowId: input.itemId,
      taskQueue: o.taskQueue,
      args: [input],
    });
    accepted.set(input.itemId, performance.now());
  });
  // Two items a second plus two minutes: a stalled lock shows as a timeout, not as a hang.
  const deadline = performance.now() + 120_000 + inputs.length * 500;
  while (log.ended.size < inputs.length) {
    if (performance.now() > deadline)
      throw new Error(
        `mutex alternative (${o.variant}): ${inputs.length - log.ended.size} of ${inputs.length} items never POSTed`,
      );
    await delay(5);
  }
  const seconds = (Math.max(...log.ended.values()) - first) / 1000;
  await inParallel(inputs.length, o.concurrency, (i) => client.workflow.getHandle(inputs[i].itemId).result());
  if (log.strays) throw new Error(`mutex alternative (${o.variant}): ${log.strays} POSTs repeated or of unknown items`);
  return { seconds, accepted, closedSeconds: (performance.now() - first) / 1000 };
}

interface Counted {
  readonly histories: Array<ReturnType<typeof countActions> & { lock: boolean }>;
  readonly byType: Map<string, number>;
  readonly signals: number;
  readonly lockRuns: number;
}

/**
 * The items' histories, and every lock run that granted one of them: an item's "acquired" signal names the run
 * that sent it. Waits until each lock run has closed (it completes once its queue is empty), so that its whole
 * history is counted.
 */
async function countHistories(client: Client, itemIds: string[], concurrency: number): Promise<Counted> {
  const histories: temporal.api.history.v1.IHistory[] = [];
  const lockFlags: boolean[] = [];
  const lockRuns = new Map<string, { workflowId: string; runId: string }>();
  await inParallel(itemIds.length, concurrency, async (i) => {
    const history = await client.workflow.getHandle(itemIds[i]).fetchHistory();
    histories.push(history);
    lockFlags.push(false);
    for (const event of history.events ?? []) {
      const signaled = event.workflowExecutionSignaledEventAttributes;
      if (signaled?.signalName !== LOCK_ACQUIRED) continue;
      const sender = signaled.externalWorkflowExecution;
      if (!sender?.workflowId || !sender.runId)
        throw new Error(`item ${itemIds[i]}: its "${LOCK_ACQUIRED}" signal does not name the lock run that sent it`);
      lockRuns.set(`${sender.workflowId}/${sender.runId}`, { workflowId: sender.workflowId, runId: sender.runId });
    }
  });
  const runs = [...lockRuns.values()];
  await inParallel(runs.length, concurrency, async (i) => {
    // followRuns: false, so that a run that continued as new counts as closed; its successor is in `runs` too.
    const handle = client.workflow.getHandle(runs[i].workflowId, runs[i].runId, { followRuns: false });
    await handle.result().catch((error: unknown) => {
      if (!(error instanceof Error && error.name === 'WorkflowContinuedAsNewError')) throw error;
    });
    histories.push(await handle.fetchHistory());
    lockFlags.push(true);
  });
  const byType = new Map<string, number>();
  let signals = 0;
  for (const history of histories) {
    for (const event of history.events ?? []) {
      const type = (EventType[event.eventType ?? EventType.EVENT_TYPE_UNSPECIFIED] ?? String(event.eventType)).replace(
        /^EVENT_TYPE_/,
        '',
      );
      byType.set(type, (byType.get(type) ?? 0) + 1);
      if (event.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED) signals++;
    }
  }
  return {
    histories: histories.map((history, i) => ({ ...countActions(history), lock: lockFlags[i] })),
    byType,
    signals,
    lockRuns: runs.length,
  };
}

function perItem(counted: Counted, items: number): PerItemFigures {
  const sum = (
    pick: (h: Counted['histories'][number]) => number,
    which: (h: Counted['histories'][number]) => boolean = () => true,
  ) => counted.histories.filter(which).reduce((total, h) => total + pick(h), 0) / items;
  return {
    events: sum((h) => h.events),
    itemEvents: sum(
      (h) => h.events,
      (h) => !h.lock,
    ),
    lockEvents: sum(
      (h) => h.events,
      (h) => h.lock,
    ),
    signals: counted.signals / items,
    workflowTasks: sum((h) => h.workflowTasksCompleted),
    starts: sum((h) => h.starts),
    localActivities: sum((h) => h.localActivities),
    timers: sum((h) => h.timers),
    actions: sum((h) => h.actions),
  };
}

/** Per key, the pairs of items whose POSTs began in the other order than their starts were accepted. */
function outOfStartOrder(
  inputs: OrderingItemInput[],
  accepted: ReadonlyMap<string, number>,
  began: ReadonlyMap<string, number>,
): number {
  const byKey = new Map<string, string[]>();
  for (const { key, itemId } of inputs) byKey.set(key, [...(byKey.get(key) ?? []), itemId]);
  let pairs = 0;
  for (const ids of byKey.values()) {
    const order = [...ids].sort((a, b) => accepted.get(a)! - accepted.get(b)!).map((id) => began.get(id)!);
    for (let i = 0; i < order.length; i++) for (let j = i + 1; j < order.length; j++) if (order[i] > order[j]) pairs++;
  }
  return pairs;
}

// For a look by hand: npx tsx bench/ordering/mutex-alternative.ts (both cases, about a minute); the suite renders the figures.
