import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import { request } from 'undici';
import { findFreePort } from '../db/embedded-postgres';
import { assertDelivered, deliveredHistory, ownCpuSeconds, pidProcess, runPart, serviceEnv, waitUntil, type Rig } from './delivery-part';
import type { PartFigures, ProcessRole } from './deliveries-report';
import type { FloorRun } from './floor-report';
import type { PartnerServer } from './partner-server';
import { childPids, commandLine, commandName } from './proc-stats';
import { spawnService, type ServiceProcess } from './service-process';

export interface ServiceOptions {
  readonly databaseUrl: string;
  readonly knex: Knex;
  readonly partner: PartnerServer;
  readonly deliveries: number;
  readonly warmup: number;
  /** CPU seconds of the PostgreSQL tree, NaN when remote. */
  postgresCpuSeconds(): number;
  progress(message: string): void;
  /** Node options for `start`, e.g. --cpu-prof (a profiled run is slower: report its profile, not its rate). */
  readonly nodeArgs?: readonly string[];
  /** A built checkout of earlier code to run instead of this one (BENCH_BEFORE_ROOT); it migrates its own database. */
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
    start = spawnService('start', {
      ...serviceEnv(options.databaseUrl, partner.url),
      DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      PORT: String(port),
      // Whatever this shell names, `start` must run its own dev server.
      TEMPORAL_ADDRESS: undefined,
      TEMPORAL_CONFIG_FILE: undefined,
      TEMPORAL_PROFILE: undefined,
    }, options.nodeArgs, options.root);
    const apiUrl = `http://127.0.0.1:${port}`;
    const waiting = { services: [start], progress };
    // Migrations, the demo directory import and the dev server come first.
    const up = await waitUntil(waiting, '`partner-service start` to answer /healthz', 120_000, async () => {
      const res = await request(`${apiUrl}/healthz`).catch(() => undefined);
      await res?.body.dump();
      return res?.statusCode === 200;
    });
    if (!up) throw new Error('`partner-service start` did not answer /healthz within 120 s');
    // Its start line is logged at info, below LOG_LEVEL warn: the dev server is found as start's child instead.
    devServer = childPids(start.pid).find((pid) => commandName(pid) === 'temporal');
    if (devServer === undefined) throw new Error('`partner-service start` runs no `temporal` dev server of its own: is a Temporal configured (temporal.toml)?');
    const args = commandLine(devServer);
    const address = `127.0.0.1:${args[args.indexOf('--port') + 1]}`;

    const measured = (label: string, role: ProcessRole, cpu: () => number) => ({ label, role, cpuSeconds: cpu });
    const rig: Rig = {
      apiUrl,
      partner,
      knex: options.knex,
      services: [start],
      processes: [
        pidProcess('Temporal dev server (child of start)', 'temporal', devServer),
        pidProcess('`partner-service start` (API and worker)', 'start', start.pid),
        measured('PostgreSQL (postmaster and backends)', 'postgres', options.postgresCpuSeconds),
        measured('bench process (load, partner server, polling)', 'bench', ownCpuSeconds),
      ],
      progress,
    };
    const tag = Date.now().toString(36);
    progress(`deliveries: floor, service: warm-up, ${options.warmup} webhooks`);
    assertDelivered(await runPart(rig, { prefix: `start-warm-${tag}`, count: options.warmup, failFirst: false }), 'the service\'s warm-up');
    progress(`deliveries: floor, service: ${options.deliveries} webhooks`);
    const part = await runPart(rig, { prefix: `start-${tag}`, count: options.deliveries, failFirst: false });
    assertDelivered(part, '`partner-service start`');
    const { counts } = await deliveredHistory(rig, address, `start-${tag}`);
    return {
      deliveries: part.accepted,
      endToEndSeconds: part.endToEndSeconds,
      deliveriesPerSecond: part.deliveriesPerSecond,
      intervalSeconds: part.untilDeliveredSeconds,
      cpu: { temporal: cpuOf(part, 'temporal'), worker: cpuOf(part, 'start'), postgres: cpuOf(part, 'postgres'), bench: cpuOf(part, 'bench'), machine: part.machineCpu },
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
