export type Cleanups = Array<() => Promise<unknown>>;

/** Runs `body` with a list of stops, then runs them in reverse (the service before Temporal, Temporal before its directory), reporting a failed one. */
export async function withCleanups<T>(
  suite: string,
  progress: (message: string) => void,
  body: (cleanups: Cleanups) => Promise<T>,
): Promise<T> {
  const cleanups: Cleanups = [];
  try {
    return await body(cleanups);
  } finally {
    for (const cleanup of cleanups.reverse())
      await cleanup().catch((error: unknown) => progress(`${suite}: cleanup failed: ${String(error)}`));
  }
}
