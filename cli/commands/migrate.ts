import { type Command } from '../command';
import { bootstrap, openMigratedDatabase } from '../bootstrap';
import { migrateLatest } from '../../db/migrate';
import { UsageError } from '../../lib/errors';

export const migrateCommand: Command = {
  name: 'migrate',
  auditActions: { '': [] },
  summary: 'Apply pending database migrations, then exit',
  usage:
    'Usage: partner-service migrate\n\nApplies every pending Knex migration to DATABASE_URL (or the embedded ' +
    'PostgreSQL) and prints\n{"applied": [...]}, the names of the migrations it applied.',
  async run(args, { verbose }) {
    if (args.length) throw new UsageError('takes no arguments');
    const runtime = bootstrap({ logsTo: 'stderr', verbose });
    const database = await openMigratedDatabase(runtime, { migrate: false });
    try {
      const applied = await migrateLatest(database.knex);
      runtime.logger.info({ applied }, applied.length ? 'migrations applied' : 'database already up to date');
      process.stdout.write(`${JSON.stringify({ applied })}\n`);
      return 0;
    } finally {
      await runtime.shutdown.shutdown();
    }
  },
};
