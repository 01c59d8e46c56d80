import { parseArgs } from 'node:util';
import { auditSuite } from '../audit/suite';
import { deliveriesSuite } from '../deliveries/suite';
import { drainSuite } from '../drain/suite';
import { erasureSuite } from '../erasure/suite';
import { feedSuite } from '../feed/suite';
import { floorSuite } from '../floor/suite';
import { importSuite } from '../import/suite';
import { listingsSuite } from '../listings/suite';
import { orderingSuite } from '../ordering/suite';
import { overloadSuite } from '../overload/suite';
import { recoverySuite } from '../recovery/suite';
import { retentionSuite } from '../retention/suite';
import { scimSuite } from '../scim/suite';
import { tokensSuite } from '../tokens/suite';
import { partnerSuite } from '../partner/suite';
import { yearSuite } from '../year/suite';
import { startBenchPostgres, withBenchDatabase } from './postgres';
import { writeSections, type RenderedSection } from './render';
import type { BenchmarkSuite } from './suite';

/** Every suite `npm run bench` runs, in order. */
const SUITES: readonly BenchmarkSuite[] = [
  importSuite,
  listingsSuite,
  scimSuite,
  floorSuite,
  deliveriesSuite,
  drainSuite,
  erasureSuite,
  retentionSuite,
  tokensSuite,
  partnerSuite,
  feedSuite,
  overloadSuite,
  auditSuite,
  orderingSuite,
  recoverySuite,
  yearSuite,
];

/**
 * `npm run bench [-- --only NAME…] [--out FILE|-]`: runs each suite against its own database on one PostgreSQL
 * server (BENCH_DATABASE_URL's, or an embedded one) and writes their sections into BENCHMARKS.md (or prints
 * them with `--out -`), keeping the other sections.
 */
async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const { values } = parseArgs({
    args: argv,
    options: { only: { type: 'string', multiple: true }, out: { type: 'string', default: 'BENCHMARKS.md' } },
  });
  const unknown = values.only?.filter((name) => !SUITES.some((s) => s.name === name)) ?? [];
  if (unknown.length)
    throw new Error(`unknown suite ${unknown.join(', ')}; suites: ${SUITES.map((s) => s.name).join(', ')}`);
  const selected = values.only ? SUITES.filter((s) => values.only!.includes(s.name)) : SUITES;
  const progress = (message: string) => process.stderr.write(`[bench] ${message}\n`);
  const server = await startBenchPostgres();
  const sections: RenderedSection[] = [];
  try {
    for (const suite of selected) {
      progress(`suite ${suite.name}`);
      const body = await withBenchDatabase(server.url, suite.name, (db) =>
        suite.run({ ...db, serverUrl: server.url, progress }),
      );
      sections.push({ title: suite.title, body });
    }
  } finally {
    await server.stop();
  }
  await writeSections(values.out, sections, argv);
  progress(`wrote ${values.out === '-' ? 'stdout' : values.out}`);
}

main().catch((error) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
