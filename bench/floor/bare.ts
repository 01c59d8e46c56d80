import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import { companyIdOf, toEnvelope } from '../../events/envelope';
import { inParallel } from '../../lib/in-parallel';
import { createLogger } from '../../lib/logger';
import { ensureSearchAttributes } from '../../temporal/register-search-attributes';
import { COMPANY_ID, WEBHOOK_ACTION, WEBHOOK_EVENT_TYPE, WEBHOOK_STATUS } from '../../temporal/search-attributes';
import { quietBundler } from '../../worker/bundle';
import { installTemporalRuntime } from '../../worker/temporal-runtime';
import { countActions } from '../harness/history';
import { cpuSeconds, machineBusySeconds } from '../harness/proc';
import { startBenchTemporal } from '../harness/temporal';
import { CONCURRENCY, EVENT, ownCpuSeconds, PARTNER_ACCESS_TOKEN, waitUntil } from '../harness/webhook-part';
import { bareActivities } from './bare-workflow/activities';
import type { bareDelivery, bareHeldDelivery } from './bare-workflow/workflows';
import type { FloorRun, RunOptions } from './report';

export interface BareOptions extends RunOptions {
  readonly executable: string;
  /** bundleWorkflowCode of bench/floor/bare-workflow/workflows, made once outside the measurements. */
  readonly workflowBundle: { readonly code: string };
  /** requestEagerStart, from a Client on the worker's NativeConnection. */
  readonly eager: boolean;
  /** Starts bareHeldDelivery and, once all are started, wakes them by signal, `wokenBySignal` in flight: the rate counts from the first signal. */
  readonly wokenBySignal?: number;
}

/** The start's four Keyword attributes, as temporal/gateway.ts sets them. */
const event = toEnvelope(EVENT);
const companyId = companyIdOf(event);
if (!companyId)
  throw new Error('the bench event has no company id: the start would carry three search attributes, not four');
const SEARCH_ATTRIBUTES = [
  { key: WEBHOOK_EVENT_TYPE, value: event.event_type },
  { key: WEBHOOK_ACTION, value: event.action },
  { key: WEBHOOK_STATUS, value: 'sending' },
  { key: COMPANY_ID, value: companyId },
];

/** The bare workflows' bundle, made once outside every measurement (webpack, 0.3 to 0.8 s). */
export async function bareWorkflowBundle() {
  // First the SDK's runtime, errors only, before any NativeConnection: the default one logs to the console and takes over SIGINT/SIGTERM.
  installTemporalRuntime(createLogger('error'));
  return bundleWorkflowCode({ workflowsPath: require.resolve('./bare-workflow/workflows'), logger: quietBundler });
}

/**
 * The floor: the bare workflow with client and worker in this process, on a fresh dev server (stopped after);
 * a warm-up, then `deliveries` starts at CONCURRENCY. Throws unless the partner received each exactly once.
 */
export async function measureBare(options: BareOptions): Promise<FloorRun> {
  const { partner, eager, progress } = options;
  const temporal = await startBenchTemporal(options.executable);
  const { address } = temporal.server;
  const native = await NativeConnection.connect({ address }).catch(async (error: unknown) => {
    await temporal.stop();
    throw error;
  });
  const plain = eager ? undefined : await Connection.connect({ address });
  try {
    await ensureSearchAttributes(native, 'default');
    const client = new Client({ connection: plain ?? native });
    const taskQueue = `bench-bare-${randomUUID()}`;
    const activities = bareActivities(`${partner.url}/webhooks`, PARTNER_ACCESS_TOKEN);
    const worker = await Worker.create({
      connection: native,
      taskQueue,
      workflowBundle: options.workflowBundle,
      activities,
    });
    const name = eager ? 'bare, eager start' : 'bare';
    const tag = Date.now().toString(36);
    return await worker.runUntil(async () => {
      progress(`floor, ${name}: warm-up, ${options.warmup} workflows`);
      await deliver({ ...options, client, taskQueue, prefix: `bare-warm-${tag}`, count: options.warmup });
      progress(`floor, ${name}: ${options.deliveries} workflows at ${CONCURRENCY} concurrent starts`);
      const pid = temporal.server.process.pid!;
      const cpuBefore = {
        temporal: cpuSeconds(pid),
        worker: ownCpuSeconds(),
        postgres: options.postgresCpuSeconds(),
        machine: machineBusySeconds(),
      };
      const run = await deliver({ ...options, client, taskQueue, prefix: `bare-${tag}`, count: options.deliveries });
      const cpu = {
        temporal: cpuSeconds(pid) - cpuBefore.temporal,
        worker: ownCpuSeconds() - cpuBefore.worker,
        postgres: options.postgresCpuSeconds() - cpuBefore.postgres,
        bench: undefined,
        machine: machineBusySeconds() - cpuBefore.machine,
      };
      const handle = client.workflow.getHandle(run.lastWorkflowId);
      await handle.result();
      return { ...run, cpu, history: countActions(await handle.fetchHistory()) };
    });
  } finally {
    await plain?.close();
    await native.close();
    await temporal.stop();
  }
}

/** Starts `count` bare workflows and waits until the partner received each; the figures of a FloorRun but CPU and history. */
async function deliver(options: BareOptions & { client: Client; taskQueue: string; prefix: string; count: number }) {
  const { client, partner, prefix, count } = options;
  partner.reset({ failFirst: false });
  const started = new Map<string, number>();
  const sent = performance.now();
  await inParallel(count, CONCURRENCY, async (i) => {
    const webhookId = `${prefix}-${i}`;
    await client.workflow.start<typeof bareDelivery | typeof bareHeldDelivery>(
      options.wokenBySignal ? 'bareHeldDelivery' : 'bareDelivery',
      {
        workflowId: webhookId,
        taskQueue: options.taskQueue,
        args: [{ webhookId, event }],
        typedSearchAttributes: SEARCH_ATTRIBUTES,
        requestEagerStart: options.eager,
      },
    );
    started.set(webhookId, performance.now());
  });
  const ids = [...started.keys()];
  const releasedAt = performance.now();
  if (options.wokenBySignal)
    await inParallel(count, options.wokenBySignal, (i) => client.workflow.getHandle(ids[i]).signal('bareRelease'));
  // As generous as the service's parts: two deliveries a second plus two minutes.
  const timeoutMs = 120_000 + count * 500;
  const done = await waitUntil(
    { services: [], progress: options.progress },
    `the bare workflows ${prefix}`,
    timeoutMs,
    async () => ids.every((id) => partner.receipts.has(id)),
  );
  const seen = performance.now();
  const surplus = ids.filter((id) => partner.receipts.get(id)!.length > 1).length;
  const strays = [...partner.receipts.keys()].filter((id) => !started.has(id)).length;
  if (!done || surplus || strays) {
    const missing = ids.filter((id) => !partner.receipts.has(id)).length;
    throw new Error(
      `bare workflows ${prefix}: ${missing} of ${count} not received, ${surplus} received more than once, ${strays} unknown ids`,
    );
  }
  const firstStarted = options.wokenBySignal ? releasedAt : Math.min(...started.values());
  const lastReceipt = Math.max(...ids.map((id) => partner.receipts.get(id)![0]));
  const endToEndSeconds = (lastReceipt - firstStarted) / 1000;
  return {
    deliveries: count,
    endToEndSeconds,
    deliveriesPerSecond: count / endToEndSeconds,
    intervalSeconds: (seen - sent) / 1000,
    lastWorkflowId: ids[ids.length - 1],
  };
}
