import path from 'node:path';
import knex, { type Knex } from 'knex';
import pg from 'pg';
import type { Config } from '../lib/config';
import { describeError } from '../lib/describe-error';
import type { Logger } from '../lib/logger';
import { startEmbeddedPostgres } from './embedded-postgres';
import { DatabaseUnusableError } from '../lib/errors';

export type { Knex };

// PostgreSQL `date` columns stay 'YYYY-MM-DD' strings instead of becoming local-midnight Date objects.
pg.types.setTypeParser(pg.types.builtins.DATE, (value) => value);
// bigint ids fit in a JS number for every id this service hands out; keep them numeric in JSON.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export interface Database {
  readonly knex: Knex;
  /** True when this process started its own embedded PostgreSQL. */
  readonly embedded: boolean;
  /** Closes the pool and, when embedded, stops PostgreSQL. Safe to call twice. */
  close(): Promise<void>;
}

/** Where the embedded PostgreSQL keeps its data: DATA_DIR/postgres. */
export const embeddedDataDir = (config: Pick<Config, 'DATA_DIR'>): string => path.resolve(config.DATA_DIR, 'postgres');

/** The database the service uses on the embedded server. */
export const SERVICE_DATABASE = 'partner_service';

/**
 * A Knex pool. Knex's own messages (a failed connection attempt while PostgreSQL is down, deprecations) go to
 * `logger` at debug level, one line each, never straight to the console: the caller's error says the same.
 */
export function createKnex(
  connectionString: string,
  pool: Knex.PoolConfig = { min: 0, max: 10 },
  logger?: Logger,
  limits?: SessionLimits,
): Knex {
  const log = (message: unknown) => logger?.debug({ knex: describeError(message).split('\n')[0] }, 'knex');
  // compileSqlOnError: false keeps a failed statement's values out of its error's message (and so out of logs):
  // the message names the SQL with its placeholders, never the bound values.
  return knex({
    client: 'pg',
    connection: { connectionString, ...(limits && { options: sessionOptions(limits) }) },
    pool,
    compileSqlOnError: false,
    log: { warn: log, error: log, debug: log, deprecate: log },
  });
}

/** How long one of the service's statements, and one of its transactions left idle, may last (0: no limit). */
export interface SessionLimits {
  readonly statementTimeoutMs: number;
  readonly idleInTransactionTimeoutMs: number;
}

/**
 * The service's own sessions are bounded: a transaction that stays open holds the partner feed back (it reads
 * only below the oldest running transaction, docs/partners.md "The feed"), so none of ours may stay open for long.
 */
const sessionOptions = ({ statementTimeoutMs, idleInTransactionTimeoutMs }: SessionLimits) =>
  `-c statement_timeout=${statementTimeoutMs} -c idle_in_transaction_session_timeout=${idleInTransactionTimeoutMs}`;

export const sessionLimitsOf = (config: Config): SessionLimits => ({
  statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
  idleInTransactionTimeoutMs: config.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS,
});

/**
 * Connects to DATABASE_URL, or starts the embedded PostgreSQL under DATA_DIR/postgres when it is unset,
 * and makes sure the `partner_service` database exists there. `signal` stops the embedded server's start.
 */
export async function openDatabase(config: Config, logger: Logger, signal?: AbortSignal): Promise<Database> {
  if (config.DATABASE_URL) {
    const db = createKnex(config.DATABASE_URL, undefined, logger, sessionLimitsOf(config));
    try {
      await assertSupportedServer(db);
    } catch (error) {
      await db.destroy();
      throw error;
    }
    return { knex: db, embedded: false, close: once(() => db.destroy()) };
  }
  const server = await startEmbeddedPostgres(embeddedDataDir(config), logger, { signal });
  logger.info({ port: server.port }, 'DATABASE_URL is not set: using embedded PostgreSQL');
  try {
    const url = await ensureDatabase(server.url, SERVICE_DATABASE);
    const db = createKnex(url, undefined, logger, sessionLimitsOf(config));
    return {
      knex: db,
      embedded: true,
      close: once(async () => {
        await db.destroy();
        await server.stop();
      }),
    };
  } catch (error) {
    await server.stop();
    throw error;
  }
}

/** The oldest PostgreSQL release the migrations and queries are tested on. */
export const MIN_SERVER_VERSION = 14;

/** Refuses servers older than MIN_SERVER_VERSION, naming the release it found. */
export async function assertSupportedServer(db: Knex, minimum = MIN_SERVER_VERSION): Promise<void> {
  const { rows } = await db.raw<{ rows: Array<{ num: string; version: string }> }>(
    "SELECT current_setting('server_version_num') AS num, current_setting('server_version') AS version",
  );
  if (Number(rows[0].num) < minimum * 10_000)
    throw new DatabaseUnusableError(
      `PostgreSQL ${rows[0].version} is not supported: the service needs PostgreSQL ${minimum} or newer (DATABASE_URL)`,
    );
}

/** Creates `name` on the server at `serverUrl` if missing, and returns the URL that points at it. */
export async function ensureDatabase(serverUrl: string, name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (!rowCount) await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
  } finally {
    await admin.end();
  }
  return withDatabaseName(serverUrl, name);
}

export function withDatabaseName(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${encodeURIComponent(name)}`;
  return parsed.toString();
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let pending: Promise<void> | undefined;
  return () => (pending ??= fn());
}
