import type { Knex } from 'knex';

/** What every benchmark suite receives from bench/harness/run.ts. */
export interface BenchContext {
  /** URL of an empty, migrated database that belongs to this suite alone. */
  readonly databaseUrl: string;
  readonly knex: Knex;
  /** The PostgreSQL server's URL, for databases of its own (a build of earlier code migrates its own). */
  readonly serverUrl: string;
  /** Logs a progress line to stderr. */
  progress(message: string): void;
}

export interface BenchmarkSuite {
  /** The name `--only` takes. */
  readonly name: string;
  /** The section's `## ` heading: fixed, so that a run replaces the section of an earlier one. */
  readonly title: string;
  /** Runs the suite and returns its section's body (Markdown, `### ` headings and below). */
  run(ctx: BenchContext): Promise<string>;
}
