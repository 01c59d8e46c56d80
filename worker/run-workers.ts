import { Worker, type WorkerOptions } from '@temporalio/worker';

/**
 * Creates the workers unless `stopping` settles first (bundling the workflows under tsx takes seconds): then
 * undefined at once, and the workers, once created, are shut down without ever polling.
 */
export async function createWorkersUnlessStopping(
  optionsList: WorkerOptions[],
  stopping: Promise<void>,
): Promise<Worker[] | undefined> {
  const creating = createWorkers(optionsList);
  const first = await Promise.race([creating, stopping.then(() => undefined)]);
  if (!first) void creating.then((workers) => runTogether(workers, Promise.resolve())).catch(() => undefined);
  return first;
}

/** Creates the workers in order; when one fails, those already created are shut down before rethrowing. */
async function createWorkers(optionsList: WorkerOptions[]): Promise<Worker[]> {
  const workers: Worker[] = [];
  try {
    for (const options of optionsList) workers.push(await Worker.create(options));
    return workers;
  } catch (error) {
    // A created worker holds the connection until it has run and shut down.
    await Promise.allSettled(workers.map((worker) => worker.runUntil(Promise.resolve())));
    throw error;
  }
}

/**
 * Runs the workers until `until` settles, then shuts them down; when one fails, the others are shut down
 * too and the failure is rethrown.
 */
export async function runTogether(workers: Worker[], until: Promise<unknown>): Promise<void> {
  let failed!: () => void;
  const anyFailed = new Promise<void>((resolve) => (failed = resolve));
  const stop = Promise.race([until, anyFailed]);
  const results = await Promise.allSettled(
    workers.map((worker) =>
      worker.runUntil(stop).catch((error: unknown) => {
        failed();
        throw error;
      }),
    ),
  );
  const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure) throw failure.reason;
}
