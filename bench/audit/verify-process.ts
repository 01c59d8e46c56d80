import { performance } from 'node:perf_hooks';
import { verifyAuditTrail } from '../../application/access/audit-verify';
import { createKnex } from '../../db/database';

/** `verifyAuditTrail` on DATABASE_URL in a process of its own, so that its peak RSS is the verify's alone; sends its figures to the parent. */
void (async () => {
  const knex = createKnex(process.env.DATABASE_URL!);
  await knex.raw('SELECT 1');
  // Run with --expose-gc (which changes nothing else): the heap before and after is what is left once garbage is collected.
  global.gc!();
  const [rssBefore, heapBefore, cpuBefore] = [
    process.resourceUsage().maxRSS * 1024,
    process.memoryUsage().heapUsed,
    process.cpuUsage(),
  ];
  let peakHeap = heapBefore;
  const sampler = setInterval(() => (peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed)), 20);
  const started = performance.now();
  const { intact, rows, problems_total, first_problem } = await verifyAuditTrail(knex);
  const [seconds, cpu] = [(performance.now() - started) / 1000, process.cpuUsage(cpuBefore)];
  clearInterval(sampler);
  global.gc!();
  const heapAfterGc = process.memoryUsage().heapUsed;
  await knex.destroy();
  // resourceUsage().maxRSS is in kilobytes, as the server children's.
  process.send!(
    {
      intact,
      rows,
      problems_total,
      first_problem,
      seconds,
      cpuSeconds: (cpu.user + cpu.system) / 1e6,
      rssBefore,
      peakRss: process.resourceUsage().maxRSS * 1024,
      heapBefore,
      peakHeap,
      heapAfterGc,
    },
    () => process.exit(0),
  );
})();
