import type { Knex } from 'knex';
import { type Config } from '../lib/config';
import type { Logger } from '../lib/logger';
import { createApp } from '../api/app';
import { healthRouter } from '../api/health';
import { metricsRouter } from '../api/metrics';
import { serveHttp, type ApiServer } from '../api/server';
import type { WebhookWorkerHandle } from './webhook-worker';
import { workerPolling } from './readiness';
import { ConfigError } from '../lib/errors';

/**
 * A standalone worker's own port: /healthz, /readyz (PostgreSQL answers and the worker polls) and /metrics
 * (its attempts, and the Temporal SDK's series), so every process of a scaled-out deployment can be scraped.
 */
export function startWorkerHttpServer(
  deps: { readonly config: Config; readonly knex: Knex; readonly logger: Logger },
  worker: Pick<WebhookWorkerHandle, 'state'>,
): Promise<ApiServer> {
  const app = createApp(deps, [(routeDeps) => healthRouter(routeDeps, [workerPolling(worker)]), metricsRouter]);
  const { WORKER_HTTP_PORT: port, HOST: host } = deps.config;
  return serveHttp(app, port, host).catch((error: unknown) => {
    // A second worker on one host meets the first one's port: say which setting gives each its own.
    if ((error as { code?: unknown }).code !== 'EADDRINUSE') throw error;
    throw new ConfigError(
      `WORKER_HTTP_PORT ${port} is already in use on ${host}: give each worker on one host its own WORKER_HTTP_PORT`,
    );
  });
}
