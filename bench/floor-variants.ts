import { z } from 'zod';
import { createLogger } from '../lib/logger';
import { installTemporalRuntime } from '../worker/temporal-runtime';
import { startBenchPostgres, withBenchDatabase } from './bench-postgres';
import { WARMUP_WEBHOOKS } from './delivery-part';
import { medianTable, type FloorRun } from './floor-report';
import { measureService } from './floor-service';
import { startPartnerServer } from './partner-server';
import { postmasterPid, treeCpuSeconds } from './proc-stats';

/**
 * A setting of `partner-service start` to try: variables added to its environment (its dev server inherits
 * them, e.g. GOGC) and node options (e.g. --max-semi-space-size=64).
 */
const variantsSchema = z
  .array(z.object({ name: z.string().min(1), env: z.record(z.string(), z.string()).default({}), nodeArgs: z.array(z.string()).default([]) }))
  .min(1)
  .refine((variants) => new Set(variants.map((v) => v.name)).size === variants.length, { message: 'variant names must differ: each names its own row' });
type Variant = z.infer<typeof variantsSchema>[number];

const DELIVERIES = 1_000;

/**
 * `npx tsx bench/floor-variants.ts`: the floor's service run alone, once per variant of BENCH_VARIANTS (JSON,
 * default: the settings as they are) in each of BENCH_FLOOR_ROUNDS rounds, side by side, each on a fresh dev
 * server; prints each run, then the medians. A setting is worth adopting only when it wins on the medians.
 */
async function main(): Promise<void> {
  const variants = variantsSchema.parse(JSON.parse(process.env.BENCH_VARIANTS ?? '[{"name":"as is"}]'));
  const rounds = Number(process.env.BENCH_FLOOR_ROUNDS ?? 3);
  const progress = (message: string) => process.stderr.write(`[bench] ${message}\n`);
  installTemporalRuntime(createLogger('error'));
  const server = await startBenchPostgres();
  try {
    const runs = await withBenchDatabase(server.url, 'floor', async ({ databaseUrl, knex }) => {
      const partner = await startPartnerServer();
      const postmaster = await postmasterPid(knex);
      const measured = new Map<string, FloorRun[]>(variants.map((v) => [v.name, []]));
      try {
        for (let round = 1; round <= rounds; round++) {
          for (const variant of variants) {
            progress(`round ${round} of ${rounds}: ${variant.name}`);
            const run = await withEnv(variant, () =>
              measureService({
                databaseUrl,
                knex,
                partner,
                deliveries: DELIVERIES,
                warmup: WARMUP_WEBHOOKS,
                progress,
                nodeArgs: variant.nodeArgs,
                postgresCpuSeconds: () => (postmaster === undefined ? NaN : treeCpuSeconds(postmaster)),
              }),
            );
            progress(`${variant.name}: ${run.deliveriesPerSecond.toFixed(1)}/s, ${((run.cpu.machine * 1000) / run.deliveries).toFixed(2)} CPU ms per delivery on the machine`);
            measured.get(variant.name)!.push(run);
          }
        }
      } finally {
        await partner.close();
      }
      return measured;
    });
    const title = `#### \`partner-service start\` with each variant: ${DELIVERIES.toLocaleString('en-US')} deliveries, medians of ${rounds} rounds`;
    process.stdout.write(`${medianTable(title, 'variant', [...runs].map(([label, list]) => ({ label, runs: list })))}\n`);
  } finally {
    await server.stop();
  }
}

/** spawnService passes this process's environment on: the variant's variables are set for its run only. */
async function withEnv<T>(variant: Variant, work: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(variant.env).map((key) => [key, process.env[key]]));
  Object.assign(process.env, variant.env);
  try {
    return await work();
  } finally {
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`floor variants failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
