import { setTimeout as delay } from 'node:timers/promises';
import type { NativeConnection } from '@temporalio/worker';
import { partnerSettings } from '../lib/config';
import { ensureSearchAttributes } from '../temporal/register-search-attributes';
import { connectWithBackoff } from './temporal-connection';
import { installTemporalRuntime } from './temporal-runtime';
import { findFreePort } from '../lib/ports';
import { reportDataAtRest } from '../application/personal-data/at-rest-report';
import { TemporalSetupError } from '../lib/errors';
import { webhookWorkerOptions, type WorkerDependencies } from './worker-options';
import { observeWorkerGauges } from './gauges';
import { runBackgroundLoops } from './background-loops';
import { createWorkersUnlessStopping, runTogether } from './run-workers';
import { setUpRetention } from './retention-schedule';

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
export function startWebhookWorker(
  deps: WorkerDependencies,
  { restartDelayMs = 30_000 }: WorkerLoopOptions = {},
): WebhookWorkerHandle {
  const { config, logger } = deps;
  const abort = new AbortController();
  const stopping = new Promise<void>((resolve) =>
    abort.signal.addEventListener('abort', () => resolve(), { once: true }),
  );
  let state: WorkerState = 'connecting';
  let polling: NativeConnection | undefined;
  observeWorkerGauges(deps);
  const done = (async () => {
    // Its count of rows under retired keys reads PostgreSQL; the lines that need no query come first. Polling
    // does not wait for it: a large table or a slow PostgreSQL must not delay deliveries.
    const reported = reportDataAtRest(deps.knex, config, logger).catch((error: unknown) =>
      logger.warn({ err: error }, 'could not report how personal data rests'),
    );
    const settings = partnerSettings(config);
    if ('missing' in settings) {
      // Polling without a partner would burn every attempt; webhooks wait in Temporal until it is configured.
      state = 'paused';
      logger.warn(
        `${settings.missing} is not set: webhook delivery is paused; ` +
          'the worker does not poll and webhooks wait in Temporal',
      );
      return reported;
    }
    installTemporalRuntime(logger, await findFreePort());
    while (!abort.signal.aborted) {
      state = 'connecting';
      const connection = await connectWithBackoff(config, logger, abort.signal);
      if (!connection) return;
      try {
        const added = await ensureSearchAttributes(connection, config.temporal.namespace);
        if (added.length)
          logger.info({ namespace: config.temporal.namespace, added }, 'registered the webhook search attributes');
        await setUpRetention(connection, deps);
        // On stop, attempts still waiting for a slot start no POST: only those in flight finish.
        const options = webhookWorkerOptions(deps, connection, abort.signal);
        const workers = await createWorkersUnlessStopping([options.delivery, options.records], stopping);
        if (!workers) return;
        const version = options.delivery.workerDeploymentOptions?.version;
        logger.info(
          {
            taskQueues: [options.delivery.taskQueue, options.records.taskQueue],
            namespace: config.temporal.namespace,
            ...(version && { deploymentVersion: version }),
          },
          version
            ? `webhook worker polling as ${version.deploymentName}:${version.buildId}: ` +
                'it runs the deliveries pinned to this build, ' +
                "and new ones once this build is the deployment's current version"
            : 'webhook worker polling',
        );
        state = 'polling';
        polling = connection;
        const loopsStop = new AbortController();
        const loops = runBackgroundLoops(deps, loopsStop.signal);
        await runTogether(workers, stopping).finally(async () => {
          polling = undefined;
          loopsStop.abort();
          await loops;
        });
        state = 'connecting';
        if (!abort.signal.aborted)
          logger.warn(
            `webhook worker stopped unexpectedly: webhook delivery is paused; restarting in ${restartDelayMs / 1000} s`,
          );
      } catch (error) {
        state = 'connecting';
        if (error instanceof TemporalSetupError) {
          state = 'refused';
          logger.error(error.message);
          throw error;
        }
        logger.error(
          { err: error },
          `webhook worker failed: webhook delivery is paused; restarting in ${restartDelayMs / 1000} s`,
        );
      } finally {
        await connection
          .close()
          .catch((error: unknown) => logger.warn({ err: error }, 'closing the Temporal connection failed'));
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
