import type { Knex } from 'knex';

/** What every benchmark suite receives from bench/run.ts. */
export interface BenchContext {
  /** URL of an empty, migrated database that belongs to this suite alone. */
  readonly databaseUrl: string;
  readonly knex: Knex;
  /** Logs a progress line to stderr. */
  progress(message: string): void;
}

export interface BenchmarkSuite {
  readonly name: string;
  /** Runs the suite and returns its section of BENCHMARKS.md (Markdown, starting with a `## ` heading). */
  run(ctx: BenchContext): Promise<string>;
}
