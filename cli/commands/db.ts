import { type Command } from '../command';
import { loadConfig } from '../../lib/config';
import { embeddedUrl, runningEmbeddedPostgres } from '../../db/embedded-postgres';
import { embeddedDataDir, SERVICE_DATABASE } from '../../db/database';
import { UsageError, CommandFailure } from '../../lib/errors';

const USAGE = [
  'Usage: partner-service db url',
  '',
  'Prints the connection URL of the service database, for psql and other tools: DATABASE_URL when it is set,',
  'otherwise the embedded PostgreSQL under DATA_DIR/postgres while the service (npm start) runs it.',
].join('\n');

export const dbCommand: Command = {
  name: 'db',
  auditActions: { url: [] },
  summary: 'Print the URL of the service database (`db url`), e.g. for psql',
  usage: USAGE,
  async run(args) {
    if (args.length !== 1 || args[0] !== 'url') throw new UsageError('expected `db url`');
    const config = loadConfig();
    if (config.DATABASE_URL) {
      process.stdout.write(`${config.DATABASE_URL}\n`);
      return 0;
    }
    const dataDir = embeddedDataDir(config);
    const running = await runningEmbeddedPostgres(dataDir);
    if (!running)
      throw new CommandFailure(
        `partner-service db: the embedded PostgreSQL in ${dataDir} is not running; start the service (npm start) ` +
          `and ask again`,
      );
    process.stdout.write(`${embeddedUrl(running.port, SERVICE_DATABASE)}\n`);
    return 0;
  },
};
