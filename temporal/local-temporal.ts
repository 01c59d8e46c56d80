import path from 'node:path';
import type { Config } from '../lib/config';
import type { Logger } from '../lib/logger';
import { preferPort } from '../lib/ports';
import { findTemporalBinary } from './binaries';
import { startDevServer } from './dev-server';
import { StartAbortedError } from '../lib/abort';

/** The Temporal that `npm start` uses, and how to stop what it started. */
export interface LocalTemporal {
  readonly address: string | undefined;
  readonly uiUrl: string | undefined;
  readonly source: 'configured' | 'temporal CLI' | 'SDK download' | 'none';
  stop(): Promise<void>;
}

const nothingToStop = async () => undefined;

/**
 * SQLite settings of the dev server `start` runs: write-ahead logging, and fsync at checkpoints only. A
 * local dev server trades durability across a power cut (not across a crash of the process) for about
 * twice the throughput; production runs Temporal on its own cluster (see README).
 */
export const LOCAL_SQLITE_PRAGMAS: readonly string[] = ['journal_mode=wal', 'synchronous=normal'];

export interface LocalTemporalOptions {
  /** The remote codec endpoint the dev server's UI calls to show decrypted payloads. */
  readonly uiCodecEndpoint?: string;
  /** Aborts the dev server's start: StartAbortedError is thrown, and what was started is stopped. */
  readonly signal?: AbortSignal;
  /**
   * Given the stop of what this call starts, as soon as there is one (the dev server from its spawn on), so that
   * the caller stops it even when a stop signal cuts the start short. Without it, the call stops it itself then.
   */
  readonly stopWith?: (stop: () => Promise<void>) => void;
}

/**
 * How long the dev server `start` runs may take to stop before it is killed. Its graceful stop takes 1 to 1.5 s,
 * more than `start`'s 2 s stop bound leaves once the worker has stopped; a kill loses nothing, since every
 * change it acknowledged is committed to its SQLite file (write-ahead log).
 */
export const LOCAL_DEV_SERVER_STOP_GRACE_MS = 500;

/**
 * Chooses Temporal for `start`: the configured server (TEMPORAL_ADDRESS or a temporal.toml profile) when there
 * is one; else a dev server from the `temporal` CLI (the
 * project's .temporal/venv or PATH) keeping its state under DATA_DIR; else the SDK's download of the CLI
 * where the machine has internet; else none, and delivery waits.
 */
export async function provideLocalTemporal(
  config: Config,
  logger: Logger,
  findBinary = findTemporalBinary,
  { uiCodecEndpoint, signal, stopWith }: LocalTemporalOptions = {},
): Promise<LocalTemporal> {
  if (config.temporal.address)
    return { address: config.temporal.address, uiUrl: undefined, source: 'configured', stop: nothingToStop };
  const dbFilename = path.resolve(config.DATA_DIR, 'temporal', 'dev-server.sqlite');
  const port = await preferPort(7233);
  const uiPort = await preferPort(8233);
  const executable = findBinary('temporal');
  if (executable) {
    logger.info(
      { executable, dbFilename },
      'no Temporal is configured (TEMPORAL_ADDRESS or a temporal.toml profile): starting a Temporal dev server',
    );
    const server = await startDevServer({
      executable,
      port,
      uiPort,
      dbFilename,
      sqlitePragmas: LOCAL_SQLITE_PRAGMAS,
      uiCodecEndpoint,
      stopGraceMs: LOCAL_DEV_SERVER_STOP_GRACE_MS,
      signal,
      onSpawned: stopWith && ((spawned) => stopWith(() => spawned.stop())),
    });
    return { address: server.address, uiUrl: server.uiUrl, source: 'temporal CLI', stop: () => server.stop() };
  }
  try {
    // The SDK's downloader lives in @temporalio/testing, a devDependency: images without it set TEMPORAL_ADDRESS.
    const { TestWorkflowEnvironment } = await import('@temporalio/testing');
    const env = await TestWorkflowEnvironment.createLocal({
      server: {
        ip: '127.0.0.1',
        port,
        ui: true,
        uiPort,
        dbFilename,
        extraArgs: uiCodecEndpoint ? ['--ui-codec-endpoint', uiCodecEndpoint] : [],
      },
    });
    // The SDK's launcher cannot be interrupted: a stop signal during it is acted on once it returns.
    if (stopWith) stopWith(() => env.teardown());
    if (signal?.aborted) {
      if (!stopWith) await env.teardown();
      throw new StartAbortedError();
    }
    return {
      address: env.address,
      uiUrl: `http://127.0.0.1:${uiPort}`,
      source: 'SDK download',
      stop: () => env.teardown(),
    };
  } catch (error) {
    if (error instanceof StartAbortedError) throw error;
    logger.warn(
      { reason: error instanceof Error ? error.message.split('\n')[0] : String(error) },
      'no Temporal: TEMPORAL_ADDRESS is unset, no temporal CLI was found (scripts/install-temporal.sh installs one) ' +
        'and the SDK could not download it; the APIs serve and webhook delivery waits for Temporal',
    );
    return { address: undefined, uiUrl: undefined, source: 'none', stop: nothingToStop };
  }
}
