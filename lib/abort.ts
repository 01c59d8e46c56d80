/** Thrown by a start-up step that the stop signal cut short: the process is stopping, not failing. */
export class StartAbortedError extends Error {
  constructor() {
    super('start-up stopped by a signal');
    this.name = 'StartAbortedError';
  }
}

/** Throws StartAbortedError when `signal` has aborted: the check between two short start-up steps. */
export function throwIfStopping(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new StartAbortedError();
}

/**
 * Waits for `work` unless `signal` aborts first. On abort, `cancel` is called (it ends what `work` started, e.g.
 * kills its child process), `work` is awaited so that nothing of it outlives the call, and StartAbortedError
 * is thrown. Without a signal, this is `work` itself.
 */
export async function unlessStopping<T>(
  signal: AbortSignal | undefined,
  work: Promise<T>,
  cancel: () => unknown = () => undefined,
): Promise<T> {
  if (!signal) return work;
  let onAbort!: () => void;
  const aborted = new Promise<'aborted'>((resolve) => {
    onAbort = () => resolve('aborted');
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    const first = await Promise.race([work.then((value) => ({ value })), aborted]);
    if (first !== 'aborted') return first.value;
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
  await cancel();
  await work.catch(() => undefined);
  throw new StartAbortedError();
}
