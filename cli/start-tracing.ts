// Imported by cli/main.ts before anything else that could load pg: instrumentation-pg patches pg only as it
// is required, so tracing must be set up first.
import { startTracing } from '../lib/tracing';

/** Why tracing could not start (a bad OTEL_* value): main() reports it as a configuration error. */
export const tracingStartError: Error | undefined = (() => {
  try {
    startTracing();
    return undefined;
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  }
})();
