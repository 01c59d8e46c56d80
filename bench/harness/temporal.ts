import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { findFreePort } from '../../lib/ports';
import { findTemporalBinary } from '../../temporal/binaries';
import { startDevServer, type DevServer } from '../../temporal/dev-server';
import { LOCAL_SQLITE_PRAGMAS } from '../../temporal/local-temporal';

/**
 * A headless dev server on a SQLite file in a fresh directory, with npm start's SQLite settings. With `tmpfs`, the
 * directory is on Linux's /dev/shm (where there is one), so that its writes stay off the disk PostgreSQL uses. Not the
 * in-memory store: its CPU climbs with every run it keeps (65 → 95 % of a core in 6 min at 50/s; on tmpfs 65-80 %).
 */
export async function startBenchTemporal(
  executable: string,
  { tmpfs = false } = {},
): Promise<{ server: DevServer; stop(): Promise<void> }> {
  const dir = await mkdtemp(
    path.join(tmpfs && existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir(), 'pis-bench-temporal-'),
  );
  try {
    const server = await startDevServer({
      executable,
      port: await findFreePort(),
      dbFilename: path.join(dir, 'temporal.db'),
      sqlitePragmas: LOCAL_SQLITE_PRAGMAS,
    });
    return { server, stop: () => server.stop().then(() => rm(dir, { recursive: true, force: true })) };
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

/** The `temporal` CLI the benchmarks run dev servers with; throws when there is none. */
export function benchTemporalBinary(): string {
  const executable = findTemporalBinary('temporal');
  if (!executable) throw new Error('no `temporal` executable: run scripts/install-temporal.sh or put it on PATH');
  return executable;
}

/** "temporal version 1.9.1 (Server 1.32.0, UI 2.54.1)" → "CLI 1.9.1, Server 1.32.0, UI 2.54.1" */
export const temporalVersion = (executable: string) =>
  execFileSync(executable, ['--version'])
    .toString()
    .trim()
    .replace(/^temporal version (\S+) \((.*)\)$/, 'CLI $1, $2');
