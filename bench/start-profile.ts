import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { npmPackageOf, sampledShares, topSelfTime, type ProfileSample, type SelfTimeProfile } from './cpu-profile';
import { measureService, type ServiceOptions } from './floor-service';

/** Where `partner-service start` spends its sampled time, by part of the delivery path. */
export interface StartProfile {
  readonly deliveries: number;
  readonly busyMs: number;
  readonly shares: ReadonlyArray<{ category: string; ms: number }>;
  /** The frames with the most self time, threads added together. */
  readonly top: SelfTimeProfile;
}

const TOP_FRAMES = 12;

const POSTGRES_PACKAGES = new Set(['knex', 'pg', 'pg-protocol', 'pg-pool', 'tarn']);
const HTTP_PACKAGES = new Set(['koa', '@koa/router', '@hapi/bourne', 'zod', 'raw-body', 'co-body']);
const TEMPORAL_PACKAGES = new Set(['rxjs', 'protobufjs', 'long', '@grpc/grpc-js']);

/**
 * The first frame from the top of the stack that belongs to a part decides: PostgreSQL (knex, pg, store/,
 * db/), the POST (undici, activities/), the HTTP ingestion (Koa, zod, api/, events/), the Temporal SDK
 * (client, worker, core bridge, protobuf). Workflow threads are the sandbox's. Syscalls such as writev count
 * for the part that made them.
 */
function partOf(sample: ProfileSample): string {
  if (!sample.mainThread) return 'workflow thread: the sandbox running activations';
  if (sample.frame.functionName === '(garbage collector)') return 'garbage collection';
  for (const { url } of sample.stack()) {
    const name = npmPackageOf(url);
    if ((name && POSTGRES_PACKAGES.has(name)) || /\/(store|db)\//.test(url)) return 'PostgreSQL client (knex, pg)';
    if (name === 'undici' || url.includes('/activities/')) return 'the POST to the partner (undici, activities/)';
    if ((name && HTTP_PACKAGES.has(name)) || /\/(api|events)\/|\/client\/(ingest|start-webhook|ids)\.|\/lib\/validation\./.test(url) || url.includes('node:_http_server')) return 'HTTP ingestion (Koa, body, zod, events/)';
    if ((name && (name.startsWith('@temporalio/') || TEMPORAL_PACKAGES.has(name))) || /\/(worker|temporal)\/|\/client\/temporal-gateway\./.test(url)) {
      return 'Temporal SDK on the main thread (client, worker, core bridge)';
    }
  }
  return 'other (Node internals, timers, start-up)';
}

/**
 * `partner-service start` once more under `node --cpu-prof`, on a fresh dev server, with the floor's load.
 * Profiling slows it, so only its shares are reported, never its rate. The profile covers start-up and the
 * warm-up too.
 */
export async function profileStart(options: Omit<ServiceOptions, 'nodeArgs'>): Promise<StartProfile> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'pis-bench-start-prof-'));
  try {
    const run = await measureService({ ...options, nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`] });
    return { deliveries: run.deliveries, ...(await sampledShares(dir, partOf)), top: await topSelfTime(dir, TOP_FRAMES) };
  } finally {
    if (process.env.KEEP_CPU_PROFILE) process.stderr.write(`cpu profile kept in ${dir}\n`);
    else await rm(dir, { recursive: true, force: true });
  }
}
