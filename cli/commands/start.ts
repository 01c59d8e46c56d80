import type { Command } from '../command';
import { bootstrap, cleanUpOnFailure, openMigratedDatabase } from '../bootstrap';
import { startApiServer } from '../../api/server';
import { startWebhookWorker } from '../../worker/webhook-worker';
import { createTemporalStarter } from '../../webhooks/temporal-starter';
import { importDemoDirectoryIfEmpty } from '../../directory/demo-directory';

export const startCommand: Command = {
  name: 'start',
  summary: 'All in one: migrate, import the demo directory into an empty database, serve the API, run the worker',
  usage: [
    'Usage: partner-service start',
    '',
    'Applies pending migrations, imports examples/demo-directory.json when the directory is empty,',
    'serves the API on HOST:PORT and runs the webhook worker in the same process.',
  ].join('\n'),
  async run() {
    const runtime = bootstrap();
    runtime.shutdown.listen();
    return cleanUpOnFailure(runtime, async () => {
      const { config, logger, shutdown } = runtime;
      const database = await openMigratedDatabase(runtime);
      await importDemoDirectoryIfEmpty(database.knex, logger);
      const worker = startWebhookWorker({ config, logger, knex: database.knex });
      shutdown.add('worker', () => worker.stop());
      // Connects on first use, so the API serves while Temporal is down (webhooks then get 503).
      const webhookStarter = createTemporalStarter(config, logger);
      shutdown.add('temporal client', () => webhookStarter.close());
      const api = await startApiServer({ config, knex: database.knex, logger, webhookStarter });
      shutdown.add('http', () => api.close());
      logger.info({ url: api.url }, 'partner service started');
      return 0;
    });
  },
};
