import { readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { startBenchPostgres, withBenchDatabase } from './bench-postgres';
import { suites } from './suites';

/**
 * `npm run bench [-- --only NAME]`: runs each suite against its own database on one PostgreSQL server
 * (BENCH_DATABASE_URL's, or an embedded one) and writes BENCHMARKS.md. With --only, the other suites'
 * sections of the existing file are kept.
 */
async function main(): Promise<void> {
  const { values } = parseArgs({ options: { only: { type: 'string', multiple: true }, out: { type: 'string', default: 'BENCHMARKS.md' } } });
  const unknown = values.only?.filter((name) => !suites.some((s) => s.name === name)) ?? [];
  if (unknown.length) throw new Error(`unknown suite ${unknown.join(', ')}; suites: ${suites.map((s) => s.name).join(', ')}`);
  const selected = values.only ? suites.filter((s) => values.only!.includes(s.name)) : suites;
  const progress = (message: string) => process.stderr.write(`[bench] ${message}\n`);

  const server = await startBenchPostgres();
  const sections: string[] = [];
  try {
    for (const suite of selected) {
      progress(`suite ${suite.name}`);
      sections.push(await withBenchDatabase(server.url, suite.name, ({ databaseUrl, knex }) => suite.run({ databaseUrl, knex, progress })));
    }
  } finally {
    await server.stop();
  }

  const written = values.only
    ? `Sections ${selected.map((s) => s.name).join(', ')} written by \`npm run bench -- --only\` on ${new Date().toISOString()}; the others are kept from earlier runs.`
    : `Written by \`npm run bench\` on ${new Date().toISOString()}.`;
  const header = [
    '# Benchmarks',
    '',
    written,
    '',
    `Machine: ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown CPU'}), ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB memory, ` +
      `Node.js ${process.version}, ${os.platform()} ${os.release()}. All traffic is on 127.0.0.1.`,
    '',
  ].join('\n');
  const kept = values.only ? await readFile(values.out!, 'utf8').catch(() => '') : '';
  await writeFile(values.out!, `${header}\n${mergeSections(kept, sections).join('\n\n')}\n`);
  progress(`wrote ${values.out}`);
}

/**
 * The `## ` sections of `existing` with each fresh section in place of the one with the same heading line;
 * fresh sections without a namesake go at the end.
 */
function mergeSections(existing: string, fresh: string[]): string[] {
  const heading = (section: string) => section.split('\n', 1)[0];
  const merged = existing.split(/^(?=## )/m).slice(1).map((section) => section.trimEnd());
  for (const section of fresh) {
    const at = merged.findIndex((old) => heading(old) === heading(section));
    if (at >= 0) merged[at] = section;
    else merged.push(section);
  }
  return merged;
}

main().catch((error) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
