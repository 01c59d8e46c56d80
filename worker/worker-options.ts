import { existsSync } from 'node:fs';
import type { Knex } from 'knex';
import type { NativeConnection, WorkerOptions } from '@temporalio/worker';
import { Client } from '@temporalio/client';
import { dataAtRest } from '../lib/at-rest';
import { runRecoveryBatch } from '../application/webhooks/recovery-batches';
import type { Config } from '../lib/config';
import type { Logger } from '../lib/logger';
import { createActivities } from '../activities/webhooks/delivery';
import { createErasureActivities } from '../activities/personal-data/erasure';
import { createRetentionActivities } from '../activities/personal-data/retention';
import { recordsTaskQueue } from '../workflows/types';
import {
  PREBUILT_BUNDLE_PATH,
  PREBUILT_TRACED_BUNDLE_PATH,
  WORKFLOW_INTERCEPTOR_MODULES,
  WORKFLOWS_PATH,
} from './bundle';
import { tracingEnabled } from '../lib/tracing';
import { dataConverterFor } from '../temporal/settings';
import { workerTracing } from './tracing';

export interface WorkerDependencies {
  readonly config: Config;
  readonly logger: Logger;
  readonly knex: Knex;
}

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
  const common = {
    connection,
    namespace: config.temporal.namespace,
    dataConverter: dataConverterFor(config),
    ...deploymentOptions(config),
  };
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
      interceptors: {
        activity: activityInterceptors,
        ...(source.workflowsPath && traced && { workflowModules: [...WORKFLOW_INTERCEPTOR_MODULES] }),
      },
      sinks,
      // Fixed slots: the partner cap holds whatever the load, and workflow tasks are bounded apart from it.
      tuner: {
        workflowTaskSlotSupplier: fixedSlots(workflowTaskSlots(config)),
        localActivityTaskSlotSupplier: fixedSlots(config.PARTNER_MAX_CONCURRENCY),
        activityTaskSlotSupplier: fixedSlots(config.PARTNER_MAX_CONCURRENCY),
        nexusTaskSlotSupplier: fixedSlots(1),
      },
      ...(config.WORKER_MAX_CACHED_WORKFLOWS !== undefined && {
        maxCachedWorkflows: config.WORKER_MAX_CACHED_WORKFLOWS,
      }),
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
        ...recoveryActivities(deps, connection),
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

/**
 * The partner recovery's batch (application/webhooks/recovery-batches.ts): PostgreSQL writes and delivery starts,
 * through a client on the worker's own connection.
 */
function recoveryActivities({ config, knex }: WorkerDependencies, connection: NativeConnection) {
  const client = new Client({
    connection,
    namespace: config.temporal.namespace,
    dataConverter: dataConverterFor(config),
  });
  const deps = {
    knex,
    atRest: dataAtRest(config),
    client,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    sendTimeoutMs: config.PARTNER_TIMEOUT_MS,
    batchSize: config.PARTNER_RECOVERY_BATCH_SIZE,
  };
  return { runRecoveryBatch: (recoveryId: string) => runRecoveryBatch(deps, recoveryId) };
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
export const workflowTaskSlots = (config: Config): number =>
  config.WORKER_WORKFLOW_TASK_SLOTS ?? config.PARTNER_MAX_CONCURRENCY + SHORT_TASK_SLOTS;
