import { execFileSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';

/**
 * The one writer of BENCHMARKS.md. Each `## ` section carries its own run line (command, date, commit) and
 * machine line, so sections measured on different days and machines can sit in one file; a run replaces only
 * the sections of the suites it ran, found by their heading.
 */
export interface RenderedSection {
  readonly title: string;
  readonly body: string;
}

const HEADER = [
  '# Benchmarks',
  '',
  'Each section says how, when and on which machine it was measured: `npm run bench -- --only NAME` replaces that',
  "suite's section and keeps the others (docs/benchmarks.md).",
].join('\n');

export const verdict = (ok: boolean) => (ok ? 'met' : '**not met**');

/** A Markdown table; a column name starting with `>` is right-aligned. */
export function table(columns: readonly string[], rows: ReadonlyArray<ReadonlyArray<string | number>>): string {
  const line = (cells: ReadonlyArray<string | number>) => `| ${cells.join(' | ')} |`;
  return [
    line(columns.map((c) => c.replace(/^>/, ''))),
    line(columns.map((c) => (c.startsWith('>') ? '---:' : '---'))).replace(/ /g, ''),
    ...rows.map(line),
  ].join('\n');
}

export function machineLine(): string {
  const cpus = os.cpus();
  return (
    `Machine: ${cpus.length} cores (${cpus[0]?.model ?? 'unknown CPU'}), ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB memory, ` +
    `Node.js ${process.version}, ${os.platform()} ${os.release()}. All traffic is on 127.0.0.1.`
  );
}

/** The commit a checkout is at; undefined when it is no git checkout. */
export function commitOf(dir = '.'): string | undefined {
  try {
    return execFileSync('git', ['-C', dir, 'rev-parse', '--short', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return undefined;
  }
}

/** The command as typed (the BENCH_ settings but the database URL, and the arguments), when, and the code's commit. */
function runLine(argv: readonly string[]): string {
  const settings = Object.entries(process.env).filter(
    ([key]) => key.startsWith('BENCH_') && key !== 'BENCH_DATABASE_URL',
  );
  const command = [
    ...settings.map(([key, value]) => `${key}=${value}`),
    'npm run bench',
    ...(argv.length ? ['--', ...argv] : []),
  ].join(' ');
  const commit = commitOf();
  return `Run: \`${command}\` on ${new Date().toISOString()}${commit ? `, code at commit ${commit}` : ''}.`;
}

export function renderSection({ title, body }: RenderedSection, argv: readonly string[]): string {
  return [`## ${title}`, '', runLine(argv), '', machineLine(), '', body.trim()].join('\n');
}

/** The `## ` sections of `existing`, each fresh one in place of its namesake; new ones go at the end. */
function mergeSections(existing: string, fresh: readonly string[]): string[] {
  const heading = (section: string) => section.split('\n', 1)[0];
  const merged = existing
    .split(/^(?=## )/m)
    .slice(1)
    .map((section) => section.trimEnd());
  for (const section of fresh) {
    const at = merged.findIndex((old) => heading(old) === heading(section));
    if (at >= 0) merged[at] = section;
    else merged.push(section);
  }
  return merged;
}

/** Writes the sections into `out` (keeping its other sections), or prints them when `out` is `-`. */
export async function writeSections(
  out: string,
  sections: readonly RenderedSection[],
  argv: readonly string[],
): Promise<void> {
  const fresh = sections.map((section) => renderSection(section, argv));
  if (out === '-') {
    process.stdout.write(`${fresh.join('\n\n')}\n`);
    return;
  }
  const kept = await readFile(out, 'utf8').catch(() => '');
  await writeFile(out, `${HEADER}\n\n${mergeSections(kept, fresh).join('\n\n')}\n`);
}
