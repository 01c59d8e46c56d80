import { execFileSync } from 'node:child_process';
import type { Knex } from 'knex';
import { bundleWorkflowCode } from '@temporalio/worker';
import { createLogger } from '../lib/logger';
import { quietBundler } from '../worker/bundle';
import { installTemporalRuntime } from '../worker/temporal-runtime';
import { startBenchPostgres, withBenchDatabase, withEmptyDatabase } from './bench-postgres';
import { WARMUP_WEBHOOKS, CONCURRENCY } from './delivery-part';
import { measureBare } from './floor-bare';
import { reportFloor, type FloorFigures, type FloorRound } from './floor-report';
import { measureService } from './floor-service';
import { profileStart } from './start-profile';
import { startPartnerServer, type PartnerServer } from './partner-server';
import { postmasterPid, treeCpuSeconds } from './proc-stats';
import { benchTemporalBinary } from './temporal-server';

/** Deliveries per measurement: about 10 s of the bare workflow on this machine. */
const DELIVERIES = 1_000;

/** Side-by-side rounds: the machine's other load varies from one run to the next (BENCH_FLOOR_ROUNDS, default 3). */
const ROUNDS = Number(process.env.BENCH_FLOOR_ROUNDS ?? 3);

/**
 * A built checkout of earlier code (`git worktree add DIR REV`, `npm ci` there, and its Temporal binaries), whose
 * `start` each round also measures, and profiles, beside this code's: before and after, in one run.
 */
const BEFORE_ROOT = process.env.BENCH_BEFORE_ROOT;

export interface FloorContext {
  readonly executable: string;
  readonly databaseUrl: string;
  readonly knex: Knex;
  readonly partner: PartnerServer;
  progress(message: string): void;
}

/**
 * The service against the floor, side by side: the bare workflow (plain, then eager start), then
 * `partner-service start`, each on a fresh dev server. The deliveries suite runs it first; `npx tsx bench/floor.ts`
 * runs it alone.
 */
export async function measureFloor(ctx: FloorContext): Promise<FloorFigures> {
  const { executable, partner, progress } = ctx;
  // Before any NativeConnection, errors only: the default runtime would log to the console and take over SIGINT/SIGTERM.
  installTemporalRuntime(createLogger('error'));
  // Once, outside every timed section (webpack, 0.3 to 0.8 s).
  const workflowBundle = await bundleWorkflowCode({ workflowsPath: require.resolve('./bare-workflow/workflows'), logger: quietBundler });
  const postmaster = await postmasterPid(ctx.knex);
  const common = { partner, deliveries: DELIVERIES, warmup: WARMUP_WEBHOOKS, progress, postgresCpuSeconds: () => (postmaster === undefined ? NaN : treeCpuSeconds(postmaster)) };
  const rounds: FloorRound[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    progress(`deliveries: floor, round ${round} of ${ROUNDS}`);
    const bare = await measureBare({ ...common, executable, workflowBundle, eager: false });
    const bareEager = await measureBare({ ...common, executable, workflowBundle, eager: true });
    const service = await measureService({ ...common, databaseUrl: ctx.databaseUrl, knex: ctx.knex });
    const before = BEFORE_ROOT && (await withEmptyDatabase(ctx.databaseUrl, 'floor_before', (db) => measureService({ ...common, ...db, root: BEFORE_ROOT })));
    rounds.push({ bare, bareEager, service, ...(before && { before }) });
  }
  // Last, so that the profiler's cost touches no rate above; BENCH_CPU_PROF=0 leaves it out.
  const profiled = process.env.BENCH_CPU_PROF !== '0';
  const startProfile = profiled ? await profileStart({ ...common, databaseUrl: ctx.databaseUrl, knex: ctx.knex }) : undefined;
  const beforeProfile = profiled && BEFORE_ROOT ? await withEmptyDatabase(ctx.databaseUrl, 'floor_before', (db) => profileStart({ ...common, ...db, root: BEFORE_ROOT })) : undefined;
  return { concurrency: CONCURRENCY, warmup: WARMUP_WEBHOOKS, rounds, startProfile, ...(BEFORE_ROOT && { before: { label: checkoutLabel(BEFORE_ROOT), profile: beforeProfile } }) };
}

/** The commit a checkout is at, for the report; its path when it is no git checkout. */
function checkoutLabel(root: string): string {
  try {
    return `commit ${execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim()}`;
  } catch {
    return root;
  }
}

/** `npx tsx bench/floor.ts`: the floor table alone, on database bench_floor of the bench PostgreSQL. */
async function main(): Promise<void> {
  const executable = benchTemporalBinary();
  const progress = (message: string) => process.stderr.write(`[bench] ${message}\n`);
  const server = await startBenchPostgres();
  try {
    const figures = await withBenchDatabase(server.url, 'floor', async ({ databaseUrl, knex }) => {
      const partner = await startPartnerServer();
      try {
        return await measureFloor({ executable, databaseUrl, knex, partner, progress });
      } finally {
        await partner.close();
      }
    });
    process.stdout.write(`${reportFloor(figures)}\n`);
  } finally {
    await server.stop();
  }
}

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(`floor bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exitCode = 1;
  });
}
