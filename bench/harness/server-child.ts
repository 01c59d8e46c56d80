import { fork, type ChildProcess } from 'node:child_process';
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';

/** What a server child reports of itself. */
interface ChildStats {
  readonly maxRssBytes: number;
  /** Time the main thread spent paused for garbage collection since the child started. */
  readonly gcPauseMs: number;
}

/** Messages between the benchmark and a server it runs in a child process (to measure that process alone). */
type ChildMessage = { type: 'ready'; url: string } | ({ type: 'stats' } & ChildStats);

export interface ServerChild {
  readonly url: string;
  /** The server's own process (for its CPU time in /proc). */
  readonly pid: number;
  /** Peak resident set size of the child so far. */
  peakRss(): Promise<number>;
  /** Garbage-collection pauses of the child so far, in milliseconds. */
  gcPauseMs(): Promise<number>;
  stop(): Promise<void>;
}

/** Forks `module` (a path without extension: compiled or under tsx alike) and waits until it reports its URL. */
export async function startServerChild(module: string, env: NodeJS.ProcessEnv): Promise<ServerChild> {
  const child = fork(`${module}${path.extname(__filename)}`, [], {
    env: { ...process.env, ...env },
    execArgv: process.execArgv,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`${module} exited with ${code} before it was ready`)));
    child.on('message', (message: ChildMessage) => {
      if (message.type === 'ready') resolve(message.url);
    });
  });
  child.removeAllListeners('exit');
  return {
    url,
    pid: child.pid!,
    peakRss: async () => (await ask(child)).maxRssBytes,
    gcPauseMs: async () => (await ask(child)).gcPauseMs,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

function ask(child: ChildProcess): Promise<ChildStats> {
  return new Promise((resolve) => {
    const onMessage = (message: ChildMessage) => {
      if (message.type !== 'stats') return;
      child.off('message', onMessage);
      resolve(message);
    };
    child.on('message', onMessage);
    child.send('stats');
  });
}

/** The child side: start the server, report its URL, answer stats requests, stop on SIGTERM. */
export async function serveInChild(start: () => Promise<{ url: string; close(): Promise<void> }>): Promise<void> {
  const server = await start();
  let gcPauseMs = 0;
  new PerformanceObserver((entries) => {
    for (const entry of entries.getEntries()) gcPauseMs += entry.duration;
  }).observe({ entryTypes: ['gc'] });
  process.on('message', (message) => {
    // resourceUsage().maxRSS is in kilobytes.
    if (message === 'stats')
      process.send!({
        type: 'stats',
        maxRssBytes: process.resourceUsage().maxRSS * 1024,
        gcPauseMs,
      } satisfies ChildMessage);
  });
  process.once('SIGTERM', () => {
    void server.close().then(() => process.exit(0));
  });
  process.send!({ type: 'ready', url: server.url } satisfies ChildMessage);
}

/** The real API (api/server.ts) in a process of its own, on the database of DATABASE_URL. */
export const startApiChild = (databaseUrl: string) =>
  startServerChild(path.join(__dirname, 'api-process'), { DATABASE_URL: databaseUrl });

/** Listens on a free loopback port; for baselines built on bare node:http. */
export async function listenOnLoopback(server: http.Server): Promise<{ url: string; close(): Promise<void> }> {
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
