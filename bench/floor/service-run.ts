import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import { findFreePort } from '../../lib/ports';
import { childPids, commandLine, commandName } from '../harness/proc';
import { spawnService, type ServiceProcess } from '../harness/service';
import {
  assertDelivered,
  deliveredHistory,
  pidProcess,
  runPart,
  serviceEnv,
  sharedProcesses,
  waitForHealthz,
  type PartFigures,
  type ProcessRole,
  type Rig,
} from '../harness/webhook-part';
import type { FloorRun, RunOptions } from './report';

export interface ServiceOptions extends RunOptions {
  readonly databaseUrl: string;
  readonly knex: Knex;
  /** A variant's settings: added to `start`'s environment, and node options (e.g. --cpu-prof, docs/benchmarks.md). */
  readonly env?: Readonly<Record<string, string>>;
  readonly nodeArgs?: readonly string[];
  /** A built checkout of other code to run instead of this one; it migrates its own database. */
  readonly root?: string;
}

/**
 * The service as `npm start` runs it: `partner-service start` with a fresh DATA_DIR, so that it starts a fresh
 * dev server of its own (npm start's SQLite settings); a warm-up, then `deliveries` webhooks through its API.
 * Throws unless every webhook was delivered exactly once.
 */
export async function measureService(options: ServiceOptions): Promise<FloorRun> {
  const { partner, progress } = options;
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'pis-bench-start-'));
  const port = await findFreePort();
  let start: ServiceProcess | undefined;
  let devServer: number | undefined;
  try {
    // Whatever this shell names, `start` must run its own dev server.
    const noTemporal = { TEMPORAL_ADDRESS: undefined, TEMPORAL_CONFIG_FILE: undefined, TEMPORAL_PROFILE: undefined };
    const env = {
      ...serviceEnv(options.databaseUrl, partner.url),
      DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      PORT: String(port),
      ...noTemporal,
      ...options.env,
    };
    start = spawnService('start', env, options.nodeArgs, options.root);
    const apiUrl = `http://127.0.0.1:${port}`;
    // Migrations, the demo directory import and the dev server come first.
    await waitForHealthz({ services: [start], progress }, '`partner-service start`', apiUrl, 120_000);
    // Its start line is logged at info, below LOG_LEVEL warn: the dev server is found as start's child instead.
    devServer = childPids(start.pid).find((pid) => commandName(pid) === 'temporal');
    if (devServer === undefined)
      throw new Error(
        '`partner-service start` runs no `temporal` dev server of its own: is a Temporal configured (temporal.toml)?',
      );
    const args = commandLine(devServer);
    const address = `127.0.0.1:${args[args.indexOf('--port') + 1]}`;
    const rig: Rig = {
      apiUrl,
      partner,
      knex: options.knex,
      services: [start],
      progress,
      processes: [
        pidProcess('Temporal dev server (child of start)', 'temporal', devServer),
        pidProcess('`partner-service start` (API and worker)', 'start', start.pid),
        ...sharedProcesses(options.postgresCpuSeconds),
      ],
    };
    const tag = Date.now().toString(36);
    progress(`floor, service: warm-up, ${options.warmup} webhooks`);
    assertDelivered(
      await runPart(rig, { prefix: `start-warm-${tag}`, count: options.warmup, failFirst: false }),
      "the service's warm-up",
    );
    progress(`floor, service: ${options.deliveries} webhooks`);
    const part = await runPart(rig, { prefix: `start-${tag}`, count: options.deliveries, failFirst: false });
    assertDelivered(part, '`partner-service start`');
    const { counts } = await deliveredHistory(rig, address, `start-${tag}`);
    return {
      deliveries: part.accepted,
      endToEndSeconds: part.endToEndSeconds,
      deliveriesPerSecond: part.deliveriesPerSecond,
      intervalSeconds: part.untilDeliveredSeconds,
      cpu: {
        temporal: cpuOf(part, 'temporal'),
        worker: cpuOf(part, 'start'),
        postgres: cpuOf(part, 'postgres'),
        bench: cpuOf(part, 'bench'),
        machine: part.machineCpu,
      },
      history: counts,
    };
  } finally {
    // start stops its dev server; a start killed after its grace period cannot, so its child goes too.
    await start?.stop();
    if (devServer !== undefined && commandName(devServer) === 'temporal') process.kill(devServer, 'SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  }
}

const cpuOf = (part: PartFigures, role: ProcessRole) => part.processes.find((p) => p.role === role)!.cpu;
