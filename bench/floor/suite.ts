import { z } from 'zod';
import { startPartnerServer } from '../harness/partner';
import { withEmptyDatabase } from '../harness/postgres';
import { postgresCpuClock } from '../harness/proc';
import { commitOf } from '../harness/render';
import type { BenchmarkSuite } from '../harness/suite';
import { benchTemporalBinary, temporalVersion } from '../harness/temporal';
import { WARMUP_WEBHOOKS } from '../harness/webhook-part';
import { bareWorkflowBundle, measureBare } from './bare';
import { reportFloor, type FloorRound } from './report';
import { measureService } from './service-run';

/** Deliveries per measurement (BENCH_FLOOR_DELIVERIES, default 1,000: about 10 s of the bare workflow). */
const DELIVERIES = Number(process.env.BENCH_FLOOR_DELIVERIES ?? 1_000);
/** Side-by-side rounds: the machine's other load varies from one run to the next (BENCH_FLOOR_ROUNDS, default 3). */
const ROUNDS = Number(process.env.BENCH_FLOOR_ROUNDS ?? 3);

/**
 * Other `start` runs measured beside this code's in every round (BENCH_FLOOR_VARIANTS, JSON): `root` is another
 * built checkout (`git worktree add DIR REV`, `npm ci` there, with its .temporal), which migrates an empty
 * database of its own; `env` is added to `start`'s environment (its dev server inherits it, e.g. GOGC);
 * `nodeArgs` go to node. BENCH_BEFORE_ROOT=DIR is the short form of one variant, that checkout as it is.
 */
const variantsSchema = z
  .array(
    z.object({
      name: z.string().min(1),
      root: z.string().optional(),
      env: z.record(z.string(), z.string()).default({}),
      nodeArgs: z.array(z.string()).default([]),
    }),
  )
  .refine((variants) => new Set(variants.map((v) => v.name)).size === variants.length, {
    message: 'variant names must differ: each names its own row',
  });
export type FloorVariant = z.infer<typeof variantsSchema>[number];

function variants(): FloorVariant[] {
  const listed = variantsSchema.parse(JSON.parse(process.env.BENCH_FLOOR_VARIANTS ?? '[]'));
  const root = process.env.BENCH_BEFORE_ROOT;
  const commit = root && commitOf(root);
  return root
    ? [...listed, { name: `before (${commit ? `commit ${commit}` : root})`, root, env: {}, nodeArgs: [] }]
    : listed;
}

/**
 * The service against the floor, side by side in each round: the bare workflow (plain, then eager start), then
 * `partner-service start` and its variants, each on a fresh dev server.
 */
export const floorSuite: BenchmarkSuite = {
  name: 'floor',
  title: 'Webhook deliveries: the service against the floor',
  async run({ databaseUrl, knex, serverUrl, progress }) {
    const executable = benchTemporalBinary();
    const others = variants();
    const workflowBundle = await bareWorkflowBundle();
    const postgresCpuSeconds = await postgresCpuClock(knex);
    const partner = await startPartnerServer();
    try {
      const common = { partner, deliveries: DELIVERIES, warmup: WARMUP_WEBHOOKS, progress, postgresCpuSeconds };
      const rounds: FloorRound[] = [];
      for (let round = 1; round <= ROUNDS; round++) {
        progress(`floor: round ${round} of ${ROUNDS}`);
        const bare = await measureBare({ ...common, executable, workflowBundle, eager: false });
        const bareEager = await measureBare({ ...common, executable, workflowBundle, eager: true });
        const service = await measureService({ ...common, databaseUrl, knex });
        const measured = [];
        for (const variant of others) {
          progress(`floor: ${variant.name}`);
          const options = { ...common, env: variant.env, nodeArgs: variant.nodeArgs, root: variant.root };
          measured.push(
            variant.root
              ? await withEmptyDatabase(serverUrl, 'floor_variant', (db) => measureService({ ...options, ...db }))
              : await measureService({ ...options, databaseUrl, knex }),
          );
        }
        rounds.push({ bare, bareEager, service, variants: measured });
      }
      return reportFloor({ temporalVersion: temporalVersion(executable), rounds, variants: others.map((v) => v.name) });
    } finally {
      await partner.close();
    }
  },
};
