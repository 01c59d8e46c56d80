import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { findFreePort } from '../../db/embedded-postgres';
import { findTemporalBinary } from '../../temporal/binaries';
import { startDevServer, type DevServer } from '../../temporal/dev-server';
import { LOCAL_SQLITE_PRAGMAS } from '../../temporal/local-temporal';

/**
 * A headless dev server on a SQLite file in a fresh directory, with npm start's SQLite settings; or, `inMemory`,
 * with its state in memory, so that its writes do not share this machine's one disk with PostgreSQL.
 */
export async function startBenchTemporal(executable: string, { inMemory = false } = {}): Promise<{ server: DevServer; stop(): Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'pis-bench-temporal-'));
  try {
    const storage = inMemory ? {} : { dbFilename: path.join(dir, 'temporal.db'), sqlitePragmas: LOCAL_SQLITE_PRAGMAS };
    const server = await startDevServer({ executable, port: await findFreePort(), ...storage });
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
  execFileSync(executable, ['--version']).toString().trim().replace(/^temporal version (\S+) \((.*)\)$/, 'CLI $1, $2');
