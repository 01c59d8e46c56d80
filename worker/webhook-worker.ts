import type { Knex } from 'knex';
import type { NativeConnection } from '@temporalio/worker';
import type { Config } from '../lib/config';
import type { Logger } from '../lib/logger';
import { connectWithBackoff } from './temporal-connection';

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

/**
 * Starts the webhook worker in the background: connect to Temporal with backoff, then poll the task queue.
 * Never throws for an unreachable Temporal; the API keeps serving while delivery is paused.
 */
export function startWebhookWorker(deps: WorkerDependencies): WebhookWorkerHandle {
  const abort = new AbortController();
  let connection: NativeConnection | undefined;
  const done = (async () => {
    connection = await connectWithBackoff(deps.config, deps.logger, abort.signal);
    if (!connection) return;
    // Webhook workflows and activities are registered here by the webhooks feature.
    await new Promise<void>((resolve) => abort.signal.addEventListener('abort', () => resolve(), { once: true }));
  })();
  return {
    done,
    async stop() {
      abort.abort();
      await done;
      await connection?.close();
    },
  };
}
