import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import { findFreePort } from '../lib/ports';
import { StartAbortedError, throwIfStopping, unlessStopping } from '../lib/abort';

export interface DevServerOptions {
  /** The `temporal` CLI. */
  readonly executable: string;
  readonly port: number;
  /** The Web UI's port; omitted means headless. */
  readonly uiPort?: number;
  /** SQLite file that keeps workflows across restarts; omitted means in memory. */
  readonly dbFilename?: string;
  /** Extra `--sqlite-pragma` values, e.g. journal_mode=wal. */
  readonly sqlitePragmas?: readonly string[];
  /** Remote codec endpoint the UI calls to decode payloads. */
  readonly uiCodecEndpoint?: string;
  /** How long to wait for the frontend to answer. */
  readonly readyTimeoutMs?: number;
  /** How long stop() lets the server stop after SIGTERM before it kills it; 10 s unless given. */
  readonly stopGraceMs?: number;
  /**
   * Aborts the start: the server is stopped (by the caller, when `onSpawned` is given) and StartAbortedError thrown.
   */
  readonly signal?: AbortSignal;
  /**
   * Called once the process is spawned, before it answers: the caller takes over stopping it (say, as a
   * shutdown step that runs beside others). A stop signal during the start then throws at once.
   */
  readonly onSpawned?: (server: DevServer) => void;
}

export interface DevServer {
  readonly address: string;
  readonly uiUrl: string | undefined;
  readonly process: ChildProcess;
  /** SIGTERM, then SIGKILL after the grace (10 s unless `stopGraceMs` says otherwise). */
  stop(): Promise<void>;
}

const NAMESPACE = 'default';

/**
 * Runs `temporal server start-dev` on 127.0.0.1 as a child process and resolves once the default namespace
 * answers. The SDK's own launcher gives up after 5 s, which a loaded 2-core machine can exceed. When `signal`
 * aborts first, the server is stopped and StartAbortedError thrown.
 */
export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const {
    executable,
    port,
    uiPort,
    dbFilename,
    sqlitePragmas = [],
    uiCodecEndpoint,
    readyTimeoutMs = 30_000,
    stopGraceMs = 10_000,
    signal,
    onSpawned,
  } = options;
  if (dbFilename) await mkdir(path.dirname(path.resolve(dbFilename)), { recursive: true });
  // The HTTP API and metrics ports too: the CLI's own picks come from the kernel's ephemeral range (see findFreePort).
  const [httpPort, metricsPort] = [await findFreePort(), await findFreePort()];
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(port),
    '--http-port',
    String(httpPort),
    '--metrics-port',
    String(metricsPort),
    '--log-format',
    'json',
    '--log-level',
    'error',
  ];
  args.push(...(uiPort === undefined ? ['--headless'] : ['--ui-port', String(uiPort), '--ui-disable-news-fetch']));
  if (dbFilename) args.push('--db-filename', path.resolve(dbFilename));
  for (const pragma of sqlitePragmas) args.push('--sqlite-pragma', pragma);
  if (uiCodecEndpoint) args.push('--ui-codec-endpoint', uiCodecEndpoint);

  const child = spawn(executable, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-2000)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  // A parent that dies without stop() must not leave the server running.
  const stopWithParent = () => child.kill('SIGTERM');
  process.once('exit', stopWithParent);
  void exited.then(() => process.off('exit', stopWithParent));
  const address = `127.0.0.1:${port}`;
  const server: DevServer = {
    address,
    uiUrl: uiPort === undefined ? undefined : `http://127.0.0.1:${uiPort}`,
    process: child,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), stopGraceMs);
      await exited;
      clearTimeout(timer);
    },
  };
  onSpawned?.(server);
  const ready = waitUntilReady(address, readyTimeoutMs, signal);
  const early = exited.then((code) => {
    throw new Error(
      `temporal server start-dev exited (code ${code}) before answering: ${stderr.trim().split('\n').pop() ?? ''}`,
    );
  });
  const answered = Promise.race([ready, early]);
  try {
    if (onSpawned) {
      await Promise.race([answered, untilAborted(signal)]);
      throwIfStopping(signal);
    } else {
      await unlessStopping(signal, answered, () => server.stop());
    }
  } catch (error) {
    // With onSpawned, the caller stops the server, beside its other shutdown steps.
    if (!(error instanceof StartAbortedError && onSpawned)) await server.stop();
    throw error;
  }
  early.catch(() => undefined);
  return server;
}

/** Resolves when `signal` aborts (never without one). */
const untilAborted = (signal: AbortSignal | undefined) =>
  new Promise<void>((resolve) =>
    signal?.aborted ? resolve() : signal?.addEventListener('abort', () => resolve(), { once: true }),
  );

async function waitUntilReady(address: string, timeoutMs: number, signal: AbortSignal | undefined): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline && !signal?.aborted) {
    const connection = await Connection.connect({ address, connectTimeout: 1000 }).catch((error: unknown) => {
      lastError = error;
      return undefined;
    });
    if (connection) {
      try {
        await connection.withDeadline(Date.now() + 2000, () =>
          connection.workflowService.describeNamespace({ namespace: NAMESPACE }),
        );
        return;
      } catch (error) {
        lastError = error;
      } finally {
        await connection.close();
      }
    }
    await delay(100);
  }
  throw new Error(
    `temporal server start-dev did not answer on ${address} within ${timeoutMs} ms ` +
      `(${lastError instanceof Error ? lastError.message : String(lastError)})`,
  );
}
