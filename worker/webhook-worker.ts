import { existsSync } from 'node:fs';
import type { Knex } from 'knex';
import { Worker, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
import type { Config } from '../lib/config';
import type { Logger } from '../lib/logger';
import { createActivities, partnerSettings } from '../activities';
import { recordsTaskQueue } from '../workflows/types';
import { PREBUILT_BUNDLE_PATH, WORKFLOWS_PATH } from './bundle';
import { connectWithBackoff } from './temporal-connection';
import { installTemporalRuntime } from './temporal-runtime';

export interface WorkerDependencies {
  readonly config: Config;
  readonly logger: Logger;
  readonly knex: Knex;
}

export interface WebhookWorkerHandle {
  /** Resolves when the worker has stopped (after stop(), or on a fatal error). */
  readonly done: Promise<void>;
  /** Stops polling, lets running activities finish, closes the connection. */
  stop(): Promise<void>;
}

/** The prebuilt bundle of a production build, or the workflow sources (bundled at start, as under tsx). */
function workflowSource(): Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> {
  return existsSync(PREBUILT_BUNDLE_PATH) ? { workflowBundle: { codePath: PREBUILT_BUNDLE_PATH } } : { workflowsPath: WORKFLOWS_PATH };
}

/**
 * Options of the two workers one process runs on one connection: `delivery` polls TEMPORAL_TASK_QUEUE for
 * the workflows and the POSTs, bounded by the partner limits; `records` polls the records queue for the
 * PostgreSQL writes, which must not use up the partner's budget.
 */
export function webhookWorkerOptions(deps: WorkerDependencies, connection: NativeConnection): { delivery: WorkerOptions; records: WorkerOptions } {
  const { config, knex, logger } = deps;
  const { sendWebhook, recordAttempt, recordOutcome } = createActivities({
    config: () => config,
    knex,
    logger: logger.child({ component: 'webhook-activities' }),
  });
  const common = { connection, namespace: config.TEMPORAL_NAMESPACE };
  return {
    delivery: {
      ...common,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      ...workflowSource(),
      activities: { sendWebhook },
      maxConcurrentActivityTaskExecutions: config.PARTNER_MAX_CONCURRENCY,
      maxTaskQueueActivitiesPerSecond: config.PARTNER_MAX_PER_SECOND,
      // A POST in flight at shutdown may finish rather than cost its attempt.
      shutdownGraceTime: config.PARTNER_TIMEOUT_MS + 5000,
    },
    records: {
      ...common,
      taskQueue: recordsTaskQueue(config.TEMPORAL_TASK_QUEUE),
      activities: { recordAttempt, recordOutcome },
      shutdownGraceTime: 30_000,
    },
  };
}

/**
 * Starts the webhook worker in the background: connect to Temporal with backoff, then poll the task queue.
 * Never throws for an unreachable Temporal; the API keeps serving while delivery is paused.
 */
export function startWebhookWorker(deps: WorkerDependencies): WebhookWorkerHandle {
  const { config, logger } = deps;
  const abort = new AbortController();
  let connection: NativeConnection | undefined;
  let workers: Worker[] = [];
  const done = (async () => {
    const settings = partnerSettings(config);
    if ('missing' in settings) {
      // Polling without a partner would burn every attempt; webhooks wait in Temporal until it is configured.
      logger.warn(`${settings.missing} is not set: webhook delivery is paused; the worker does not poll and webhooks wait in Temporal`);
      return;
    }
    installTemporalRuntime(logger);
    connection = await connectWithBackoff(config, logger, abort.signal);
    if (!connection) return;
    try {
      const options = webhookWorkerOptions(deps, connection);
      workers = [await Worker.create(options.delivery), await Worker.create(options.records)];
      if (abort.signal.aborted) return;
      logger.info(
        { taskQueues: [options.delivery.taskQueue, options.records.taskQueue], namespace: config.TEMPORAL_NAMESPACE },
        'webhook worker polling',
      );
      await runTogether(workers);
      logger.info('webhook worker stopped');
    } catch (error) {
      logger.error({ err: error }, 'webhook worker failed: webhook delivery is stopped');
    }
  })();
  return {
    done,
    async stop() {
      abort.abort();
      for (const worker of workers) if (worker.getState() === 'RUNNING') worker.shutdown();
      await done;
      await connection?.close();
    },
  };
}

/** Runs the workers until all have stopped; when one fails, the others are shut down too. */
export async function runTogether(workers: Worker[]): Promise<void> {
  const shutdownOthers = () => {
    for (const worker of workers) if (worker.getState() === 'RUNNING') worker.shutdown();
  };
  const results = await Promise.allSettled(workers.map((worker) => worker.run().catch((error: unknown) => {
    shutdownOthers();
    throw error;
  })));
  const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure) throw failure.reason;
}
