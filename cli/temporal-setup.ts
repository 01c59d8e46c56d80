import type { Runtime } from './bootstrap';
import { TemporalSetupError } from '../lib/errors';

/**
 * A Temporal that refuses the service's set-up (its search attributes) cannot deliver anything, and no
 * restart mends it: the process stops with exit code 1 after the worker has logged the one line saying why.
 */
export function exitOnTemporalSetupError(runtime: Runtime, workerDone: Promise<void>): void {
  workerDone.catch(async (error: unknown) => {
    if (!(error instanceof TemporalSetupError)) throw error;
    await runtime.shutdown.shutdown();
    process.exit(1);
  });
}
