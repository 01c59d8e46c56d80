import { fork } from 'node:child_process';
import path from 'node:path';
import type { Knex } from 'knex';
import { migrateLatest } from '../../db/migrate';
import { AUDIT_ACTIONS } from '../../lib/vocabulary';
import { registerDevelopmentIndexKey } from '../../store/personal-data/subject-index-keys';
import { withCleanups } from '../harness/cleanups';
import { startPartnerServer } from '../harness/partner';
import { withEmptyDatabase } from '../harness/postgres';
import { postgresCpuClock } from '../harness/proc';
import { table, verdict } from '../harness/render';
import { median } from '../harness/stats';
import type { BenchmarkSuite } from '../harness/suite';
import { benchTemporalBinary } from '../harness/temporal';
import { CONCURRENCY, ingest, startServiceRig, waitForHealthz } from '../harness/webhook-part';

/** Chained rows seeded (BENCH_AUDIT_ROWS) and the smaller point first verified at a tenth of them; rows a seeding statement; ingestion rounds and webhooks per side a round. */
const [ROWS, SEED_BATCH, ROUNDS, WEBHOOKS] = [Number(process.env.BENCH_AUDIT_ROWS ?? 1_000_000), 1_000, 6, 300];
const POINTS = [ROWS / 10, ROWS];
/** Every action but audit.purge, whose rows carry the anchor the purge recorded (the verify checks it against the chain's). */
const ACTIONS = AUDIT_ACTIONS.filter((action) => action !== 'audit.purge');
type Verified = {
  intact: boolean;
  rows: number;
  problems_total: number;
  first_problem: unknown;
  seconds: number;
  cpuSeconds: number;
  rssBefore: number;
  peakRss: number;
  heapBefore: number;
  peakHeap: number;
  heapAfterGc: number;
};
type Point = Verified & { seedSeconds?: number; postgresCpu: number };
/** The old space of the last verify's process (--max-old-space-size), to show the verify needs no more. */
const CAPPED_MIB = 32;
const [mib, n] = [
  (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`,
  (v: number) => Math.round(v).toLocaleString('en'),
];

/** Appends `from`..`to` through the real chain trigger, SEED_BATCH rows a statement (each its own transaction), VACUUM of audit_chain after each, then VACUUM ANALYZE and CHECKPOINT. */
async function seed(knex: Knex, from: number, to: number): Promise<number> {
  const started = performance.now();
  for (let first = from; first <= to; first += SEED_BATCH) {
    await knex.raw(
      `INSERT INTO audit_events (at, actor, action, target, parameters, phase, outcome, request_id)
      SELECT now() - interval '40 days' + g * interval '1 second', 'operator-' || g % 20, (?::text[])[1 + g % ?::int], 'webhook:' || gen_random_uuid(),
             jsonb_build_object('reason', 'bench', 'count', g % 1000), 'outcome', 'succeeded', 'req-' || g FROM generate_series(?::int, ?::int) g`,
      [ACTIONS, ACTIONS.length, first, Math.min(to, first + SEED_BATCH - 1)],
    );
    // The one row of audit_chain gets a version per append; unvacuumed, they pile up and the trigger's SELECT … FOR UPDATE reads them all.
    await knex.raw('VACUUM audit_chain');
  }
  await knex.raw('VACUUM ANALYZE audit_events');
  await knex.raw('CHECKPOINT');
  return (performance.now() - started) / 1000;
}

/** verifyAuditTrail in a child process of its own (verify-process.ts), with PostgreSQL's CPU seconds meanwhile. */
async function verifyInChild(
  knex: Knex,
  databaseUrl: string,
  nodeArgs: string[] = [],
): Promise<Verified & { postgresCpu: number }> {
  const postgres = await postgresCpuClock(knex);
  const cpuBefore = postgres();
  const child = fork(path.join(__dirname, `verify-process${path.extname(__filename)}`), [], {
    env: { ...process.env, DATABASE_URL: databaseUrl },
    execArgv: [...process.execArgv, '--expose-gc', ...nodeArgs],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const verified = await new Promise<Verified>((resolve, reject) => {
    child.once('message', (message) => resolve(message as Verified));
    child.once('exit', (code) => reject(new Error(`the verify process exited with ${code} before it reported`)));
  });
  return { ...verified, postgresCpu: postgres() - cpuBefore };
}

/** The number of audit rows of each database. */
const auditRows = (knexes: readonly Knex[]) =>
  Promise.all(knexes.map(async (k) => Number((await k('audit_events').count({ c: '*' }))[0].c)));

/**
 * ROWS audit rows appended through the chain trigger and verified (a tenth first), each verify in a process of its own;
 * then ingestion through two `partner-service api`s at once, one on a database whose trail is empty and one on that trail.
 */
export const auditSuite: BenchmarkSuite = {
  name: 'audit',
  title: 'Audit trail verification (1,000,000 chained rows) and ingestion beside it',
  run: ({ databaseUrl, knex, serverUrl, progress }) =>
    withEmptyDatabase(serverUrl, 'audit_trail', (trail) =>
      withCleanups('audit', progress, async (cleanups) => {
        await migrateLatest(trail.knex);
        await registerDevelopmentIndexKey(trail.knex);
        const points: Point[] = [];
        for (const [i, target] of POINTS.entries()) {
          progress(`audit: appending rows ${n((POINTS[i - 1] ?? 0) + 1)} to ${n(target)}`);
          const seedSeconds = await seed(trail.knex, (POINTS[i - 1] ?? 0) + 1, target);
          progress(`audit: verifying ${n(target)} rows`);
          points.push({ seedSeconds, ...(await verifyInChild(trail.knex, trail.databaseUrl)) });
          const [count] = await auditRows([trail.knex]);
          if (!points[i].intact || points[i].rows !== target || count !== target)
            throw new Error(
              `audit: ${n(target)} rows seeded, the table holds ${n(count)}, the verify says ${points[i].intact ? 'intact' : `not intact (${points[i].problems_total} problems, the first ${JSON.stringify(points[i].first_problem)})`} with ${n(points[i].rows)}`,
            );
        }
        progress(`audit: verifying ${n(ROWS)} rows with the old space capped at ${CAPPED_MIB} MiB`);
        const capped = await verifyInChild(trail.knex, trail.databaseUrl, [`--max-old-space-size=${CAPPED_MIB}`]);
        if (!capped.intact || capped.rows !== ROWS)
          throw new Error(
            `audit: the capped verify says ${capped.intact ? 'intact' : 'not intact'} with ${n(capped.rows)} rows`,
          );
        const partner = await startPartnerServer().then((p) => (cleanups.push(() => p.close()), p));
        const { rigWith, spawnApi } = await startServiceRig({
          databaseUrl,
          knex,
          partner,
          executable: benchTemporalBinary(),
          cleanups,
          progress,
        });
        const rig = rigWith([]);
        const full = await spawnApi({ DATABASE_URL: trail.databaseUrl });
        await waitForHealthz(rig, 'the API on the empty trail', rig.apiUrl, 60_000);
        await waitForHealthz({ services: [full.process], progress }, 'the API on the full trail', full.url, 60_000);
        const sides = [
          { name: 'empty trail', url: rig.apiUrl, knex },
          { name: `${n(ROWS)} rows`, url: full.url, knex: trail.knex },
        ];
        const [auditBefore, webhooksBefore] = [
          await auditRows(sides.map((s) => s.knex)),
          await Promise.all(sides.map(async (s) => Number((await s.knex('webhook_events').count({ c: '*' }))[0].c))),
        ];
        await Promise.all(sides.map((s, k) => ingest(s.url, `warm-${k}`, 100)));
        const rates: number[][] = sides.map(() => []);
        for (let round = 0; round < ROUNDS; round++) {
          progress(`audit: ingestion round ${round + 1}/${ROUNDS}`);
          const started = performance.now();
          // Both at once, whichever side's first requests leave first alternating.
          await Promise.all(
            (round % 2 ? [...sides].reverse() : sides).map(async (side) => {
              const { accepted } = await ingest(
                side.url,
                `${side.name === 'empty trail' ? 'empty' : 'full'}-${round}`,
                WEBHOOKS,
              );
              if (accepted.size !== WEBHOOKS)
                throw new Error(`audit: ${side.name}, round ${round + 1}: ${accepted.size} of ${WEBHOOKS} accepted`);
              rates[sides.indexOf(side)].push(WEBHOOKS / ((performance.now() - started) / 1000));
            }),
          );
        }
        const auditAfter = await auditRows(sides.map((s) => s.knex));
        const webhooksAfter = await Promise.all(
          sides.map(async (s) => Number((await s.knex('webhook_events').count({ c: '*' }))[0].c)),
        );
        const posted = 100 + ROUNDS * WEBHOOKS;
        const ratios = rates[1].map((r, i) => r / rates[0][i]);
        const newAudit = auditAfter.map((a, i) => a - auditBefore[i]);
        if (newAudit.some((d) => d !== 0))
          throw new Error(`audit: ingestion wrote audit rows (${newAudit.join(', ')})`);
        const [small, large] = points;
        const perRow = large.seconds / large.rows / (small.seconds / small.rows);
        return [
          `${n(ROWS)} audit rows (\`BENCH_AUDIT_ROWS\`) appended through the chain trigger of 020_verifiable_audit (seq, prev_hash and SHA-256 under the lock on \`audit_chain\`), ${n(SEED_BATCH)} a statement, each statement its own transaction (\`INSERT … SELECT … FROM generate_series\`: actor, an action of AUDIT_ACTIONS but audit.purge, a target, small jsonb parameters, phase outcome, outcome succeeded), with a VACUUM of \`audit_chain\` after each statement (its one row gets a new version per append; left to autovacuum, the versions pile up by the hundred thousand and the trigger's \`SELECT … FOR UPDATE\` reads them all), then VACUUM ANALYZE and CHECKPOINT; ` +
            `the first ${n(small.rows)} are verified before the rest are appended. Each \`verifyAuditTrail\` (batches of 5,000 rows, every hash recomputed in Node) runs in a node process of its own, so that its peak RSS (\`resourceUsage().maxRSS\`, as the server children's) is the verify's: "before" is that process's peak once it has loaded the code and connected, the heap is sampled every 20 ms, and measured once more after a full GC at the end (\`--expose-gc\`). PostgreSQL's CPU counts the postmaster and all its backends.`,
          '',
          table(
            [
              'rows in the trail',
              '>appended in',
              '>appended rows/s',
              '>verify wall s',
              '>verified rows/s',
              '>verify CPU s (node)',
              '>PostgreSQL CPU s',
              '>peak RSS before → after',
              '>heap before → peak',
              '>heap after GC',
              'report',
            ],
            [...points, capped].map((p: Point, i) => [
              i < points.length ? n(p.rows) : `${n(p.rows)}, old space capped at ${CAPPED_MIB} MiB`,
              p.seedSeconds === undefined ? '–' : `${p.seedSeconds.toFixed(1)} s`,
              p.seedSeconds === undefined ? '–' : n((p.rows - (points[i - 1]?.rows ?? 0)) / p.seedSeconds),
              p.seconds.toFixed(1),
              n(p.rows / p.seconds),
              p.cpuSeconds.toFixed(1),
              p.postgresCpu.toFixed(1),
              `${mib(p.rssBefore)} → ${mib(p.peakRss)}`,
              `${mib(p.heapBefore)} → ${mib(p.peakHeap)}`,
              mib(p.heapAfterGc),
              `${p.intact ? 'intact' : 'not intact'}, ${n(p.rows)} rows`,
            ]),
          ),
          '',
          `${n(large.rows)} ÷ ${n(small.rows)} rows, side by side in one run: verify time ×${(large.seconds / small.seconds).toFixed(2)} for ×${(large.rows / small.rows).toFixed(0)} the rows, time per row ×${perRow.toFixed(2)} (no more than linear, time per row ≤ 1.25×: ${verdict(perRow <= 1.25)}). ` +
            `Peak RSS ×${(large.peakRss / small.peakRss).toFixed(2)} and peak heap ×${(large.peakHeap / small.peakHeap).toFixed(2)}: V8 lets garbage pile up while there is room; the heap after a full GC at the end is ×${(large.heapAfterGc / small.heapAfterGc).toFixed(2)} (nothing kept), and the verify of all ${n(ROWS)} rows in a process whose old space is capped at ${CAPPED_MIB} MiB completes (${capped.intact ? 'intact' : 'not intact'}, ${n(capped.rows)} rows, ${capped.seconds.toFixed(1)} s, peak RSS ${mib(capped.peakRss)}): the walk's working set does not grow with the trail (${verdict(capped.intact && large.heapAfterGc / small.heapAfterGc <= 1.2)}). ` +
            `The verify at ${n(large.rows)} says intact with ${n(large.rows)} rows (asserted).`,
          '',
          '### Ingestion beside the trail (it writes no audit row)',
          '',
          `Two \`partner-service api\` processes on one dev server, no worker: one on this suite's database, whose trail is empty, one on the database holding the ${n(ROWS)} rows. ${ROUNDS} rounds after 100 webhooks of warm-up each; in each, ${WEBHOOKS} webhooks are POSTed to each API at the same time, ${CONCURRENCY} in flight each (the example candidate/new event, each its own candidate), which side's first requests leave first alternating; a side's rate is its webhooks over the time until its last 202.`,
          '',
          table(
            ['API on', '>median rate', '>rate per round', '>webhook rows written', '>audit rows before → after'],
            sides.map((s, i) => [
              s.name,
              `${median(rates[i]).toFixed(1)}/s`,
              rates[i].map((r) => r.toFixed(0)).join(', '),
              n(webhooksAfter[i] - webhooksBefore[i]),
              `${n(auditBefore[i])} → ${n(auditAfter[i])}`,
            ]),
          ),
          '',
          `${n(ROWS)} rows ÷ empty trail, the median of the rounds' ratios (${ratios.map((r) => r.toFixed(2)).join(', ')}): **${median(ratios).toFixed(3)}**. ` +
            `${n(posted)} webhooks POSTed to each API; audit rows written by them: ${newAudit.join(' and ')} (asserted 0): ingestion appends nothing to the chain, so it neither waits on the lock of \`audit_chain\` nor pays for a hash.`,
        ].join('\n');
      }),
    ),
};
