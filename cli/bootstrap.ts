import { loadConfig, type Config } from '../lib/config';
import { createLogger, type LogStream, type Logger } from '../lib/logger';
import { Shutdown } from '../lib/shutdown';
import { StartAbortedError, throwIfStopping } from '../lib/abort';
import { shutdownTracing } from '../lib/tracing';
import { openDatabase, type Database } from '../db/database';
import { migrateLatest } from '../db/migrate';
import { recordKeyedDeployment } from '../application/personal-data/keyed-deployment';
import { commandLogLevel } from './log-level';
import { subcommandOf, type Command } from './command';

export interface Runtime {
  readonly config: Config;
  readonly logger: Logger;
  readonly shutdown: Shutdown;
}

/**
 * Validates the configuration (throws ConfigError) and creates the logger. One-shot commands pass
 * `logsTo: 'stderr'` so their stdout is only their result; they log warnings and errors only unless LOG_LEVEL
 * is set or `verbose` (cli/log-level.ts).
 */
export function bootstrap({
  logsTo = 'stdout',
  verbose = false,
}: { logsTo?: LogStream; verbose?: boolean } = {}): Runtime {
  const config = loadConfig();
  // Set in the environment (or .env), as loadConfig reads it: an empty value is unset there too.
  const configured = process.env.LOG_LEVEL ? config.LOG_LEVEL : undefined;
  const logger = createLogger(commandLogLevel({ configured, oneShot: logsTo === 'stderr', verbose }), logsTo);
  const shutdown = new Shutdown(logger);
  // Registered first, so it runs last: the spans of everything that stops before it are sent.
  shutdown.add('tracing', shutdownTracing);
  return { config, logger, shutdown };
}

/**
 * Runs a command body; on failure, undoes what it had started (pools, embedded PostgreSQL) and rethrows. A
 * body that a stop signal cut short is a clean stop: exit code 0 once everything has stopped.
 */
export async function cleanUpOnFailure(runtime: Runtime, body: () => Promise<number>): Promise<number> {
  try {
    return await runtime.shutdown.starting(body);
  } catch (error) {
    await runtime.shutdown.shutdown();
    if (error instanceof StartAbortedError) return 0;
    throw error;
  }
}

/** Opens the database, registers its closing as a shutdown step, and optionally applies migrations. */
export async function openMigratedDatabase(runtime: Runtime, { migrate = true } = {}): Promise<Database> {
  const { signal } = runtime.shutdown;
  const database = await openDatabase(runtime.config, runtime.logger, signal);
  runtime.shutdown.add('database', () => database.close());
  throwIfStopping(signal);
  if (migrate) {
    const applied = await migrateLatest(database.knex);
    if (applied.length) runtime.logger.info({ applied }, 'applied database migrations');
  }
  await recordKeyedDeployment(database.knex, runtime.config);
  return database;
}

/**
 * A client command's one database action: logs to stderr, opens the migrated database, prints the action's
 * result as one line of JSON on stdout (exit 0), and shuts down whatever happened.
 */
export async function printDatabaseAction(
  verbose: boolean,
  action: (runtime: Runtime, knex: Database['knex']) => Promise<unknown>,
): Promise<number> {
  const runtime = bootstrap({ logsTo: 'stderr', verbose });
  try {
    const database = await openMigratedDatabase(runtime);
    process.stdout.write(`${JSON.stringify(await action(runtime, database.knex))}\n`);
    return 0;
  } finally {
    await runtime.shutdown.shutdown();
  }
}

/** The database work of one subcommand, its arguments parsed already: its result is printed as one JSON line. */
export type DatabaseAction = (runtime: Runtime, knex: Database['knex']) => Promise<unknown>;

/** A command whose subcommands each do one piece of database work and print its result (partner, tokens). */
export function databaseSubcommands(
  command: Pick<Command, 'name' | 'summary' | 'usage' | 'auditActions'>,
  subcommands: Record<string, (args: string[]) => DatabaseAction>,
): Command {
  return {
    ...command,
    async run(args, { verbose }) {
      const { subcommand, rest } = subcommandOf(args, subcommands);
      return printDatabaseAction(verbose, subcommand(rest));
    },
  };
}
