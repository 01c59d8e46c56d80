import { type Command } from '../command';
import { bootstrap, cleanUpOnFailure, openMigratedDatabase } from '../bootstrap';
import { partnerSettings } from '../../lib/config';
import { exitOnTemporalSetupError } from '../temporal-setup';
import { refuseToStartWithoutKeys } from '../../application/personal-data/keyed-deployment';
import { CommandFailure } from '../../lib/errors';

export const workerCommand: Command = {
  name: 'worker',
  auditActions: { '': [] },
  summary: 'Run the Temporal worker that delivers webhooks',
  usage: [
    'Usage: partner-service worker',
    '',
    'Polls TEMPORAL_TASK_QUEUE (and its -records queue) on the configured Temporal, reconnecting with backoff,',
    'until SIGINT or SIGTERM. Needs PARTNER_ENDPOINT and PARTNER_ACCESS_TOKEN. Serves /healthz, /readyz',
    'and /metrics on HOST:WORKER_HTTP_PORT.',
  ].join('\n'),
  async run(_args, { verbose }) {
    const runtime = bootstrap({ verbose });
    // Delivering is this process's only job: without a partner it stops at once rather than idle.
    const settings = partnerSettings(runtime.config);
    if ('missing' in settings)
      throw new CommandFailure(`${settings.missing} is not set: the worker has no partner endpoint to deliver to`);
    runtime.shutdown.listen();
    return cleanUpOnFailure(runtime, async () => {
      const database = await openMigratedDatabase(runtime, { migrate: false });
      // Without keys in a keyed deployment it could record no attempt: it refuses to start, in one line (exit 2).
      await refuseToStartWithoutKeys(database.knex, runtime.config);
      // Loaded here, not at the top: the CLI's client commands must not load the worker's native core.
      const { startWebhookWorker } = await import('../../worker/webhook-worker.js');
      const { startWorkerHttpServer } = await import('../../worker/worker-http.js');
      const deps = { config: runtime.config, logger: runtime.logger, knex: database.knex };
      // Steps run last-added first: the worker drains while /readyz answers 503, then the port closes.
      let http: Awaited<ReturnType<typeof startWorkerHttpServer>> | undefined;
      runtime.shutdown.add('http', () => http?.close());
      const worker = startWebhookWorker(deps);
      runtime.shutdown.add('worker', () => worker.stop());
      http = await startWorkerHttpServer(deps, worker);
      runtime.logger.info({ url: http.url }, 'worker health and metrics listening');
      exitOnTemporalSetupError(runtime, worker.done);
      return 0;
    });
  },
};
