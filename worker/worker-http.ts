import type { Knex } from 'knex';
import type { Config } from '../lib/config';
import type { Logger } from '../lib/logger';
import { createApp } from '../api/app';
import { healthRouter, type ReadinessCheck } from '../api/health';
import { metricsRouter } from '../api/metrics';
import { serveHttp, type ApiServer } from '../api/server';
import type { WebhookWorkerHandle, WorkerState } from './webhook-worker';

const NOT_READY: Record<Exclude<WorkerState, 'polling'>, string> = {
  connecting: 'the worker is not polling Temporal: it is connecting (see the log for why)',
  paused: 'the worker does not poll: no partner endpoint is configured',
  stopped: 'the worker has stopped polling: it is shutting down',
  refused: 'Temporal refused the worker\'s set-up (see the log)',
};

/** Ready only while the worker polls: a load balancer or an orchestrator then knows deliveries flow here. */
function temporalPolling(worker: Pick<WebhookWorkerHandle, 'state'>): ReadinessCheck {
  return {
    name: 'temporal',
    check() {
      const state = worker.state();
      return state === 'polling' ? { state } : { state, reason: NOT_READY[state] };
    },
  };
}

/**
 * A standalone worker's own port: /healthz, /readyz (PostgreSQL answers and the worker polls) and /metrics
 * (its attempts, and the Temporal SDK's series), so every process of a scaled-out deployment can be scraped.
 */
export function startWorkerHttpServer(
  deps: { readonly config: Config; readonly knex: Knex; readonly logger: Logger },
  worker: Pick<WebhookWorkerHandle, 'state'>,
): Promise<ApiServer> {
  const app = createApp(deps, [(routeDeps) => healthRouter(routeDeps, [temporalPolling(worker)]), metricsRouter]);
  return serveHttp(app, deps.config.WORKER_HTTP_PORT, deps.config.HOST);
}
