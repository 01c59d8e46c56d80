import type { Command } from '../command';
import { bootstrap, cleanUpOnFailure, openMigratedDatabase } from '../bootstrap';
import { startApiServer } from '../../api/server';
import { createTemporalGateway } from '../../temporal/gateway';

export const apiCommand: Command = {
  name: 'api',
  auditActions: { '': [] },
  summary: 'Serve the HTTP API (applies pending migrations first)',
  usage: 'Usage: partner-service api\n\nServes the REST, SCIM and internal APIs on HOST:PORT until SIGINT or SIGTERM.',
  async run(_args, { verbose }) {
    const runtime = bootstrap({ verbose });
    runtime.shutdown.listen();
    return cleanUpOnFailure(runtime, async () => {
      const database = await openMigratedDatabase(runtime);
      // Connects on first use, so the API serves while Temporal is down (webhooks are then refused until it answers).
      const temporalGateway = createTemporalGateway(runtime.config, runtime.logger);
      runtime.shutdown.add('temporal client', () => temporalGateway.close());
      const api = await startApiServer({
        config: runtime.config,
        knex: database.knex,
        logger: runtime.logger,
        temporalGateway,
      });
      runtime.shutdown.add('http', () => api.close());
      runtime.logger.info({ url: api.url }, 'API listening');
      return 0;
    });
  },
};
