import type { Command } from '../command';
import { bootstrap, cleanUpOnFailure, openMigratedDatabase } from '../bootstrap';
import { startWebhookWorker } from '../../worker/webhook-worker';

export const workerCommand: Command = {
  name: 'worker',
  summary: 'Run the Temporal worker that delivers webhooks',
  usage: 'Usage: partner-service worker\n\nPolls TEMPORAL_TASK_QUEUE at TEMPORAL_ADDRESS, reconnecting with backoff, until SIGINT or SIGTERM.',
  async run() {
    const runtime = bootstrap();
    runtime.shutdown.listen();
    return cleanUpOnFailure(runtime, async () => {
      const database = await openMigratedDatabase(runtime, { migrate: false });
      const worker = startWebhookWorker({ config: runtime.config, logger: runtime.logger, knex: database.knex });
      runtime.shutdown.add('worker', () => worker.stop());
      return 0;
    });
  },
};
