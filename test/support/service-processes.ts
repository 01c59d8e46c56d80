// The service's own processes for a test file (`partner-service api` and `partner-service worker`), on one
// PostgreSQL, one Temporal server and one partner, and SIGKILLed together when the file is done.
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { findFreePort } from '../../lib/ports';
import type { DevServer } from '../../temporal/dev-server';
import { startPartnerServer, type PartnerHandler, type PartnerServer } from './partner-server';
import { startCli, waitForExit } from './cli';
import { createTestDatabase, type TestDatabase } from './database';
import { startTestDevServer, tempDir } from './temporal';
import { PARTNER_TOKEN } from './tokens';

export type ServiceChild = ReturnType<typeof startCli>['child'];

/** What one process wrote, whole: `name` says which process (its command and task queue). */
export interface CapturedOutput {
  readonly name: string;
  readonly output: ReturnType<typeof startCli>['output'];
}

/** Where the processes go; read when a process starts, since a test file's `before` makes them. */
export interface ServiceSetting {
  readonly work: string;
  readonly databaseUrl: string;
  readonly temporalPort: number;
  readonly partnerUrl: string;
}

export function serviceProcesses(setting: () => ServiceSetting, env: Record<string, string> = {}) {
  const children: ServiceChild[] = [];
  const outputs: CapturedOutput[] = [];
  /** The environment every process of `taskQueue` shares. */
  const common = (taskQueue: string) => {
    const { databaseUrl, temporalPort } = setting();
    return {
      PATH: process.env.PATH,
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: `127.0.0.1:${temporalPort}`,
      TEMPORAL_TASK_QUEUE: taskQueue,
      LOG_LEVEL: 'info',
      ...env,
    };
  };
  return {
    common,
    /** A worker process; resolves when it polls. */
    async startWorker(taskQueue: string, extra: Record<string, string> = {}) {
      const { work, partnerUrl } = setting();
      const worker = startCli(
        ['worker'],
        {
          PARTNER_ENDPOINT: partnerUrl,
          PARTNER_ACCESS_TOKEN: PARTNER_TOKEN,
          ...common(taskQueue),
          WORKER_HTTP_PORT: String(await findFreePort()),
          ...extra,
        },
        work,
        /webhook worker polling/,
      );
      children.push(worker.child);
      outputs.push({ name: `worker ${taskQueue}`, output: worker.output });
      await worker.started;
      return worker;
    },
    /** An API process on a free port; resolves with its base URL once it listens. */
    async startApi(taskQueue: string, extra: Record<string, string> = {}) {
      const port = await findFreePort();
      const api = startCli(
        ['api'],
        { ...common(taskQueue), HOST: '127.0.0.1', PORT: String(port), ...extra },
        setting().work,
        /API listening/,
      );
      children.push(api.child);
      outputs.push({ name: `api ${taskQueue}`, output: api.output });
      await api.started;
      return `http://127.0.0.1:${port}`;
    },
    async kill(child: ServiceChild) {
      child.kill('SIGKILL');
      await waitForExit(child);
    },
    /** Every process started, in order (its `spawnargs` name its command). */
    children: (): readonly ServiceChild[] => [...children],
    /** Every process's stdout and stderr so far, in the order they started. */
    outputs: (): readonly CapturedOutput[] => outputs,
    /** Every process still running, sent SIGTERM (the graceful shutdown); resolves with their exit codes. */
    async terminateAll(): Promise<Array<number | null>> {
      const running = children.filter((child) => child.exitCode === null && child.signalCode === null);
      for (const child of running) child.kill('SIGTERM');
      return Promise.all(running.map(waitForExit));
    },
    /** Every process still running, SIGKILLed. */
    async stopAll() {
      for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await Promise.all(children.map(waitForExit));
    },
  };
}

/** What a test file of service processes made, each part absent when its `before` failed first. */
export interface ServiceFixtures {
  readonly partner?: { close(): Promise<void> };
  readonly db?: { drop(): Promise<void> };
  readonly server?: { stop(): Promise<void> };
  readonly work?: string;
}

/** A test file's `after`: its processes SIGKILLed, then the partner, the database, the Temporal server and the work folder. */
export async function stopServiceFixtures(
  processes: ReturnType<typeof serviceProcesses>,
  fixtures: ServiceFixtures,
): Promise<void> {
  await processes.stopAll();
  await stopFixtures(fixtures);
}

async function stopFixtures({ partner, db, server, work }: ServiceFixtures): Promise<void> {
  await partner?.close();
  await db?.drop();
  await server?.stop();
  if (work) await rm(work, { recursive: true, force: true });
}

/** The fixtures of a test file of service processes, all started. */
export interface StartedServiceFixtures {
  readonly work: string;
  readonly server: DevServer;
  readonly serverPort: number;
  readonly db: TestDatabase;
  readonly partner: PartnerServer;
  readonly setting: () => ServiceSetting;
}

/**
 * A work folder, a dev server on a free port (its SQLite there, with `devServer`'s pragmas), a database and a partner answering with `handler`,
 * started side by side; when one fails, those that started are stopped before the error is thrown.
 */
export async function startServiceFixtures(
  name: string,
  handler?: PartnerHandler,
  devServer: { readonly sqlitePragmas?: readonly string[] } = {},
): Promise<StartedServiceFixtures> {
  const work = await tempDir(name);
  const serverPort = await findFreePort();
  const started: ServiceFixtures & { work: string } = { work };
  const results = await Promise.allSettled([
    startTestDevServer({ dbFilename: path.join(work, 'temporal.db'), port: serverPort, ...devServer }).then((server) =>
      Object.assign(started, { server }),
    ),
    createTestDatabase().then((db) => Object.assign(started, { db })),
    startPartnerServer(handler).then((partner) => Object.assign(started, { partner })),
  ]);
  const failed = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
  if (failed) {
    await stopFixtures(started);
    throw failed.reason;
  }
  const { server, db, partner } = started as Required<ServiceFixtures> & {
    server: DevServer;
    db: TestDatabase;
    partner: PartnerServer;
  };
  return {
    work,
    server,
    serverPort,
    db,
    partner,
    setting: () => ({ work, databaseUrl: db.url, temporalPort: serverPort, partnerUrl: partner.url }),
  };
}
