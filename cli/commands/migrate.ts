import type { Command } from '../command';
import { bootstrap, openMigratedDatabase } from '../bootstrap';
import { migrateLatest } from '../../db/migrate';

export const migrateCommand: Command = {
  name: 'migrate',
  summary: 'Apply pending database migrations, then exit',
  usage: 'Usage: partner-service migrate\n\nApplies every pending Knex migration to DATABASE_URL (or the embedded PostgreSQL).',
  async run() {
    const runtime = bootstrap({ logsTo: 'stderr' });
    const database = await openMigratedDatabase(runtime, { migrate: false });
    try {
      const applied = await migrateLatest(database.knex);
      runtime.logger.info({ applied }, applied.length ? 'migrations applied' : 'database already up to date');
      return 0;
    } finally {
      await runtime.shutdown.shutdown();
    }
  },
};
