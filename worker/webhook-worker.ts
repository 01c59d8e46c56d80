import { existsSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import type { Knex } from 'knex';
import { Worker, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
import type { Config } from '../lib/config';
import type { Logger } from '../lib/logger';
import { createActivities } from '../activities';
import { createErasureActivities } from '../activities/erasure';
import { createRetentionActivities } from '../activities/retention';
import { partnerSettings } from '../lib/config';
import { recordsTaskQueue } from '../workflows/types';
import { PREBUILT_BUNDLE_PATH, PREBUILT_TRACED_BUNDLE_PATH, WORKFLOW_INTERCEPTOR_MODULES, WORKFLOWS_PATH } from './bundle';
import { tracingEnabled } from '../lib/tracing';
import { ensureSearchAttributes, TemporalSetupError } from '../temporal/register-search-attributes';
import { dataConverterFor } from '../temporal/settings';
import { connectWithBackoff } from './temporal-connection';
import { installTemporalRuntime } from './temporal-runtime';
import { findFreePort } from '../db/embedded-postgres';
import { reportDataAtRest } from '../application/at-rest-report';
import { countWaitingDeliveries } from '../application/delivery-log';
import { partnerSnapshot } from '../application/partner-operator';
import { runPartnerRecovery } from '../application/partner-recovery';
import { createTemporalGateway } from '../application/temporal-gateway';
import { countOverdueErasuresWith, countStartsInDoubtWith, countWaitingWebhooksWith, observeOldestBodyWith, observePartnerWith } from '../lib/metrics';
import { countStartsInDoubt, runStartResolution } from '../application/start-resolution';
import { countOverdueErasures } from '../application/erasure';
import { oldestStoredBody, recordNamespaceRetention } from '../application/retention';
import { readNamespaceRetention } from '../temporal/namespace-retention';
import { RETENTION_INTERVAL, retentionScheduleId } from '../lib/retention';
import { ensureRetentionSchedule, namespaceRetentionWarning } from './retention-schedule';
import { probePartner } from '../activities/partner-probe';
import { workerTracing } from './tracing';

export interface WorkerDependencies {
  readonly config: Config;
  readonly logger: Logger;
  readonly knex: Knex;
}

export interface WebhookWorkerHandle {
  /**
   * Resolves when the worker has stopped after stop(); rejects with TemporalSetupError when Temporal refuses
   * the service's set-up (search attributes), which no restart can mend.
   */
  readonly done: Promise<void>;
  /** Stops polling, lets running activities finish, closes the connection. */
  stop(): Promise<void>;
  /** Where the loop stands, for the worker's /readyz: `polling` is the only ready state. */
  state(): WorkerState;
  /** The connection the workers poll on, while they poll: a client in this process may start eagerly on it. */
  pollingConnection(): NativeConnection | undefined;
}

export type WorkerState = 'paused' | 'connecting' | 'polling' | 'stopped' | 'refused';

/**
 * The prebuilt bundle of a production build (with the tracing interceptors only when tracing is on), or the
 * workflow sources (bundled at start, as under tsx).
 */
function workflowSource(traced: boolean): Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> {
  const prebuilt = traced ? PREBUILT_TRACED_BUNDLE_PATH : PREBUILT_BUNDLE_PATH;
  return existsSync(prebuilt) ? { workflowBundle: { codePath: prebuilt } } : { workflowsPath: WORKFLOWS_PATH };
}

/**
 * Options of the two workers one process runs on one connection: `delivery` polls TEMPORAL_TASK_QUEUE for
 * the workflows and the POSTs, bounded by PARTNER_MAX_CONCURRENCY here and by the partner gate's cap across
 * every worker;
 * `records` polls the records queue for the PostgreSQL writes, which must not use up the partner's budget.
 */
export function webhookWorkerOptions(
  deps: WorkerDependencies,
  connection: NativeConnection,
  draining?: AbortSignal,
): { delivery: WorkerOptions; records: WorkerOptions } {
  const { config, knex, logger } = deps;
  const { deliverAttempt, recordAttempt, recordOutcome } = createActivities({
    config: () => config,
    knex,
    logger: logger.child({ component: 'webhook-activities' }),
    draining,
    workflowService: connection.workflowService,
  });
  const common = { connection, namespace: config.temporal.namespace, dataConverter: dataConverterFor(config), ...deploymentOptions(config) };
  const { sinks, activityInterceptors } = workerTracing();
  const traced = tracingEnabled();
  const source = workflowSource(traced);
  return {
    delivery: {
      ...common,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      ...source,
      // deliverAttempt runs as a local activity beside its workflow task.
      activities: { deliverAttempt },
      // workflowModules serves only the unbundled case (tsx): the prebuilt bundle has them already, and the SDK
      // warns at every start when both are given.
      interceptors: { activity: activityInterceptors, ...(source.workflowsPath && traced && { workflowModules: [...WORKFLOW_INTERCEPTOR_MODULES] }) },
      sinks,
      // Fixed slots: the partner cap holds whatever the load, and workflow tasks are bounded apart from it.
      tuner: {
        workflowTaskSlotSupplier: fixedSlots(workflowTaskSlots(config)),
        localActivityTaskSlotSupplier: fixedSlots(config.PARTNER_MAX_CONCURRENCY),
        activityTaskSlotSupplier: fixedSlots(config.PARTNER_MAX_CONCURRENCY),
        nexusTaskSlotSupplier: fixedSlots(1),
      },
      ...(config.WORKER_MAX_CACHED_WORKFLOWS !== undefined && { maxCachedWorkflows: config.WORKER_MAX_CACHED_WORKFLOWS }),
      // Most deliveries are one workflow task on the non-sticky queue, which the SDK's default of 10 pollers at
      // a 0.2 sticky ratio polls with 2: autoscaling follows the server's backlog instead.
      workflowTaskPollerBehavior: { type: 'autoscaling' },
      // A POST in flight at shutdown may finish rather than cost its attempt.
      shutdownGraceTime: config.PARTNER_TIMEOUT_MS + 5000,
    },
    records: {
      ...common,
      taskQueue: recordsTaskQueue(config.TEMPORAL_TASK_QUEUE),
      // Erasure and retention activities too: PostgreSQL work (and Temporal's deletes), never the partner's budget.
      activities: {
        recordAttempt,
        recordOutcome,
        ...createErasureActivities({ config: () => config, knex, workflowService: connection.workflowService }),
        ...createRetentionActivities({ config: () => config, knex, workflowService: connection.workflowService }),
      },
      tuner: {
        workflowTaskSlotSupplier: fixedSlots(1),
        localActivityTaskSlotSupplier: fixedSlots(1),
        activityTaskSlotSupplier: fixedSlots(config.WORKER_RECORD_ACTIVITY_SLOTS),
        nexusTaskSlotSupplier: fixedSlots(1),
      },
      interceptors: { activity: activityInterceptors },
      shutdownGraceTime: 30_000,
    },
  };
}

const fixedSlots = (numSlots: number) => ({ type: 'fixed-size' as const, numSlots });

/**
 * With WORKER_BUILD_ID, both workers poll as one Worker Deployment Version, so the records queue moves with
 * the build too, and every run stays pinned to the build it started on: a new workflow shape ships without
 * `patched()` while the old build drains (docs/webhooks.md). Without it they are unversioned.
 */
export function deploymentOptions(config: Config): Pick<WorkerOptions, 'workerDeploymentOptions'> {
  if (config.WORKER_BUILD_ID === undefined) return {};
  return {
    workerDeploymentOptions: {
      useWorkerVersioning: true,
      version: { deploymentName: config.WORKER_DEPLOYMENT_NAME, buildId: config.WORKER_BUILD_ID },
      defaultVersioningBehavior: 'PINNED',
    },
  };
}

/** Workflow-task slots beyond those the attempts hold: timers firing, updates, queries, completions. */
export const SHORT_TASK_SLOTS = 40;

/**
 * A first attempt runs as a local activity inside its workflow task, which holds its slot until the POST is
 * recorded. So every attempt slot needs a workflow-task slot of its own, plus room for the short tasks: with
 * fewer, the workflow tasks cap attempts below PARTNER_MAX_CONCURRENCY, and eager starts fall back to the task
 * queue once the slots are taken.
 */
export const workflowTaskSlots = (config: Config): number => config.WORKER_WORKFLOW_TASK_SLOTS ?? config.PARTNER_MAX_CONCURRENCY + SHORT_TASK_SLOTS;

export interface WorkerLoopOptions {
  /** Pause before connecting again after the workers failed. */
  readonly restartDelayMs?: number;
}

/**
 * Starts the webhook worker in the background: connect to Temporal with backoff, register the search
 * attributes, then poll both task queues. An unreachable Temporal, or workers that fail after connecting (a
 * namespace not created yet, a lost server), pause delivery and the loop starts again; the API keeps serving
 * meanwhile. Only a refused set-up ends the loop, since waiting cannot fix it.
 */
export function startWebhookWorker(deps: WorkerDependencies, { restartDelayMs = 30_000 }: WorkerLoopOptions = {}): WebhookWorkerHandle {
  const { config, logger } = deps;
  const abort = new AbortController();
  const stopping = new Promise<void>((resolve) => abort.signal.addEventListener('abort', () => resolve(), { once: true }));
  let state: WorkerState = 'connecting';
  let polling: NativeConnection | undefined;
  countWaitingWebhooksWith(() => countWaitingDeliveries(deps.knex));
  observePartnerWith(() => partnerSnapshot(deps.knex, config));
  observeOldestBodyWith(() => oldestStoredBody(deps.knex), config.WEBHOOK_PAYLOAD_RETENTION_DAYS);
  countStartsInDoubtWith(() => countStartsInDoubt(deps.knex, config.WEBHOOK_START_DOUBT_SECONDS));
  countOverdueErasuresWith(() => countOverdueErasures(deps.knex));
  const done = (async () => {
    // Its count of rows under retired keys reads PostgreSQL; the lines that need no query come first.
    const reported = reportDataAtRest(deps.knex, config, logger);
    const settings = partnerSettings(config);
    if ('missing' in settings) {
      // Polling without a partner would burn every attempt; webhooks wait in Temporal until it is configured.
      state = 'paused';
      logger.warn(`${settings.missing} is not set: webhook delivery is paused; the worker does not poll and webhooks wait in Temporal`);
      return reported;
    }
    await reported;
    installTemporalRuntime(logger, await findFreePort());
    while (!abort.signal.aborted) {
      state = 'connecting';
      const connection = await connectWithBackoff(config, logger, abort.signal);
      if (!connection) return;
      try {
        const added = await ensureSearchAttributes(connection, config.temporal.namespace);
        if (added.length) logger.info({ namespace: config.temporal.namespace, added }, 'registered the webhook search attributes');
        await setUpRetention(connection, deps);
        // On stop, attempts still waiting for a slot start no POST: only those in flight finish.
        const options = webhookWorkerOptions(deps, connection, abort.signal);
        const workers = await createWorkersUnlessStopping([options.delivery, options.records], stopping);
        if (!workers) return;
        const version = options.delivery.workerDeploymentOptions?.version;
        logger.info(
          { taskQueues: [options.delivery.taskQueue, options.records.taskQueue], namespace: config.temporal.namespace, ...(version && { deploymentVersion: version }) },
          version
            ? `webhook worker polling as ${version.deploymentName}:${version.buildId}: it runs the deliveries pinned to this build, and new ones once this build is the deployment's current version`
            : 'webhook worker polling',
        );
        state = 'polling';
        polling = connection;
        // The partner recovery runs while the workers poll: probes of a tripped breaker, and the end of holds.
        const guardStop = new AbortController();
        const gateway = createTemporalGateway(config, logger);
        const guard = runPartnerRecovery({ config, knex: deps.knex, logger: logger.child({ component: 'partner-guard' }), gateway, probe: () => probePartner(config) }, guardStop.signal);
        // Beside it, the lookups that settle every start whose outcome an api process did not learn.
        const resolution = runStartResolution(
          { knex: deps.knex, logger: logger.child({ component: 'start-resolution' }), doubtSeconds: config.WEBHOOK_START_DOUBT_SECONDS, gateway },
          guardStop.signal,
        );
        await runTogether(workers, stopping).finally(async () => {
          polling = undefined;
          guardStop.abort();
          await Promise.all([guard, resolution]);
          await gateway.close();
        });
        state = 'connecting';
        if (!abort.signal.aborted) logger.warn(`webhook worker stopped unexpectedly: webhook delivery is paused; restarting in ${restartDelayMs / 1000} s`);
      } catch (error) {
        state = 'connecting';
        if (error instanceof TemporalSetupError) {
          state = 'refused';
          logger.error(error.message);
          throw error;
        }
        logger.error({ err: error }, `webhook worker failed: webhook delivery is paused; restarting in ${restartDelayMs / 1000} s`);
      } finally {
        await connection.close().catch((error: unknown) => logger.warn({ err: error }, 'closing the Temporal connection failed'));
      }
      await delay(restartDelayMs, undefined, { signal: abort.signal }).catch(() => {});
    }
  })();
  void done.then(
    () => state !== 'paused' && (state = 'stopped'),
    () => undefined,
  );
  return {
    done,
    state: () => (abort.signal.aborted && state !== 'refused' ? 'stopped' : state),
    pollingConnection: () => (abort.signal.aborted ? undefined : polling),
    async stop() {
      abort.abort();
      await done.catch(() => undefined);
    },
  };
}

/**
 * The retention schedule of this task queue (created, or updated to this worker's settings), the namespace's
 * retention recorded for the log purge, and one warning line when Temporal keeps closed runs longer than the
 * payload retention. Neither stops delivery: a failure
 * is logged, and the next start tries again.
 */
async function setUpRetention(connection: NativeConnection, { config, logger, knex }: WorkerDependencies): Promise<void> {
  const scheduleId = retentionScheduleId(config.TEMPORAL_TASK_QUEUE);
  try {
    const outcome = await ensureRetentionSchedule(connection, config);
    logger.info({ scheduleId, every: RETENTION_INTERVAL }, `retention schedule ${outcome}`);
  } catch (error) {
    logger.error({ err: error, scheduleId }, 'the retention schedule could not be created or updated: the purge does not run on its own until a worker starts with it');
  }
  try {
    const retentionSeconds = await readNamespaceRetention(connection.workflowService, config.temporal.namespace);
    // The log purge keeps a row while Temporal may still hold its run (docs/personal-data.md#temporals-copy).
    if (retentionSeconds !== undefined) await recordNamespaceRetention(knex, config.temporal.namespace, retentionSeconds);
    const warning = namespaceRetentionWarning(retentionSeconds, config);
    if (warning) logger.warn(warning);
  } catch (error) {
    logger.warn({ err: error }, 'could not read the Temporal namespace retention (DescribeNamespace)');
  }
}

/**
 * Creates the workers unless `stopping` settles first (bundling the workflows under tsx takes seconds): then
 * undefined at once, and the workers, once created, are shut down without ever polling.
 */
async function createWorkersUnlessStopping(optionsList: WorkerOptions[], stopping: Promise<void>): Promise<Worker[] | undefined> {
  const creating = createWorkers(optionsList);
  const first = await Promise.race([creating, stopping.then(() => undefined)]);
  if (!first) void creating.then((workers) => runTogether(workers, Promise.resolve())).catch(() => undefined);
  return first;
}

/** Creates the workers in order; when one fails, those already created are shut down before rethrowing. */
async function createWorkers(optionsList: WorkerOptions[]): Promise<Worker[]> {
  const workers: Worker[] = [];
  try {
    for (const options of optionsList) workers.push(await Worker.create(options));
    return workers;
  } catch (error) {
    // A created worker holds the connection until it has run and shut down.
    await Promise.allSettled(workers.map((worker) => worker.runUntil(Promise.resolve())));
    throw error;
  }
}

/**
 * Runs the workers until `until` settles, then shuts them down; when one fails, the others are shut down
 * too and the failure is rethrown.
 */
export async function runTogether(workers: Worker[], until: Promise<unknown>): Promise<void> {
  let failed!: () => void;
  const anyFailed = new Promise<void>((resolve) => (failed = resolve));
  const stop = Promise.race([until, anyFailed]);
  const results = await Promise.allSettled(
    workers.map((worker) =>
      worker.runUntil(stop).catch((error: unknown) => {
        failed();
        throw error;
      })),
  );
  const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure) throw failure.reason;
}
