import { existsSync } from 'node:fs';
import type { Knex } from 'knex';
import { Worker, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
import type { Config } from '../lib/config';
import type { Logger } from '../lib/logger';
import { createActivities, partnerSettings } from '../activities';
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

/** Worker options from configuration: the partner limits bound the send activities. */
export function webhookWorkerOptions(deps: WorkerDependencies, connection: NativeConnection): WorkerOptions {
  const { config, knex, logger } = deps;
  return {
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    ...workflowSource(),
    activities: createActivities({ config: () => config, knex, logger: logger.child({ component: 'webhook-activities' }) }),
    maxConcurrentActivityTaskExecutions: config.PARTNER_MAX_CONCURRENCY,
    maxTaskQueueActivitiesPerSecond: config.PARTNER_MAX_PER_SECOND,
    // A POST in flight at shutdown may finish rather than cost its attempt.
    shutdownGraceTime: config.PARTNER_TIMEOUT_MS + 5000,
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
  let worker: Worker | undefined;
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
      worker = await Worker.create(webhookWorkerOptions(deps, connection));
      if (abort.signal.aborted) return;
      logger.info({ taskQueue: config.TEMPORAL_TASK_QUEUE, namespace: config.TEMPORAL_NAMESPACE }, 'webhook worker polling');
      await worker.run();
      logger.info('webhook worker stopped');
    } catch (error) {
      logger.error({ err: error }, 'webhook worker failed: webhook delivery is stopped');
    }
  })();
  return {
    done,
    async stop() {
      abort.abort();
      if (worker?.getState() === 'RUNNING') worker.shutdown();
      await done;
      await connection?.close();
    },
  };
}
