import type { Command } from '../command';
import { bootstrap, cleanUpOnFailure, openMigratedDatabase } from '../bootstrap';
import { partnerSettings } from '../../lib/config';
import { exitOnTemporalSetupError } from '../temporal-setup';

export const workerCommand: Command = {
  name: 'worker',
  summary: 'Run the Temporal worker that delivers webhooks',
  usage: [
    'Usage: partner-service worker',
    '',
    'Polls TEMPORAL_TASK_QUEUE (and its -records queue) on the configured Temporal, reconnecting with backoff,',
    'until SIGINT or SIGTERM. Needs PARTNER_ENDPOINT and PARTNER_ACCESS_TOKEN.',
  ].join('\n'),
  async run() {
    const runtime = bootstrap();
    // Delivering is this process's only job: without a partner it stops at once rather than idle.
    const settings = partnerSettings(runtime.config);
    if ('missing' in settings) {
      process.stderr.write(`${settings.missing} is not set: the worker has no partner endpoint to deliver to\n`);
      return 1;
    }
    runtime.shutdown.listen();
    return cleanUpOnFailure(runtime, async () => {
      const database = await openMigratedDatabase(runtime, { migrate: false });
      // Loaded here, not at the top: the CLI's client commands must not load the worker's native core.
      const { startWebhookWorker } = await import('../../worker/webhook-worker.js');
      const worker = startWebhookWorker({ config: runtime.config, logger: runtime.logger, knex: database.knex });
      runtime.shutdown.add('worker', () => worker.stop());
      exitOnTemporalSetupError(runtime, worker.done);
      return 0;
    });
  },
};
