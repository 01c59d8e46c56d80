// The service's own processes for a test file (`partner-service api` and `partner-service worker`), on one
// PostgreSQL, one Temporal server and one partner, and SIGKILLed together when the file is done.
import { rm } from 'node:fs/promises';
import { findFreePort } from '../../db/embedded-postgres';
import { startCli, waitForExit } from './cli';

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
    return { PATH: process.env.PATH, DATABASE_URL: databaseUrl, TEMPORAL_ADDRESS: `127.0.0.1:${temporalPort}`, TEMPORAL_TASK_QUEUE: taskQueue, LOG_LEVEL: 'info', ...env };
  };
  return {
    common,
    /** A worker process; resolves when it polls. */
    async startWorker(taskQueue: string, extra: Record<string, string> = {}) {
      const { work, partnerUrl } = setting();
      const worker = startCli(
        ['worker'],
        { PARTNER_ENDPOINT: partnerUrl, PARTNER_ACCESS_TOKEN: 'service-partner-token', ...common(taskQueue), WORKER_HTTP_PORT: String(await findFreePort()), ...extra },
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
      const api = startCli(['api'], { ...common(taskQueue), HOST: '127.0.0.1', PORT: String(port), ...extra }, setting().work, /API listening/);
      children.push(api.child);
      outputs.push({ name: `api ${taskQueue}`, output: api.output });
      await api.started;
      return `http://127.0.0.1:${port}`;
    },
    async kill(child: ServiceChild) {
      child.kill('SIGKILL');
      await waitForExit(child);
    },
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
export async function stopServiceFixtures(processes: ReturnType<typeof serviceProcesses>, { partner, db, server, work }: ServiceFixtures): Promise<void> {
  await processes.stopAll();
  await partner?.close();
  await db?.drop();
  await server?.stop();
  if (work) await rm(work, { recursive: true, force: true });
}
