/** Stops pushed on as a suite starts things; run in reverse order (the service before Temporal, Temporal before its directory). */
export type Cleanups = Array<() => Promise<unknown>>;

/** Runs `body` with a list of cleanups and runs them all afterwards, reporting (not throwing) a failed one. */
export async function withCleanups<T>(suite: string, progress: (message: string) => void, body: (cleanups: Cleanups) => Promise<T>): Promise<T> {
  const cleanups: Cleanups = [];
  try {
    return await body(cleanups);
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch((error: unknown) => progress(`${suite}: cleanup failed: ${String(error)}`));
  }
}
