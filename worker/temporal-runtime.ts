import { DefaultLogger, makeTelemetryFilterString, Runtime, type LogLevel } from '@temporalio/worker';
import type { Logger } from '../lib/logger';
import { includeSdkMetricsFrom } from '../lib/metrics';

const PINO_METHOD: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/**
 * Routes the Temporal SDK's logs (and core's native logs) through the project's pino logger. With
 * `sdkMetricsPort`, core's metrics (task latencies, schedule-to-start, sticky cache, slots) are served on that
 * loopback port, and the process's /metrics merges them into its own answer. Must run before any
 * NativeConnection is made; later calls do nothing. Signals are left to lib/shutdown.ts, which stops the
 * worker in order.
 */
export function installTemporalRuntime(logger: Logger, sdkMetricsPort?: number): void {
  if (Runtime._instance !== undefined) return;
  const temporalLogger = logger.child({ component: 'temporal' });
  // Loopback only: the process's own /metrics is the one endpoint operators expose.
  const bindAddress = sdkMetricsPort === undefined ? undefined : `127.0.0.1:${sdkMetricsPort}`;
  Runtime.install({
    logger: new DefaultLogger('DEBUG', ({ level, message, meta }) =>
      temporalLogger[PINO_METHOD[level]]({ ...meta }, message),
    ),
    shutdownSignals: [],
    telemetryOptions: {
      logging: { forward: {}, filter: makeTelemetryFilterString({ core: 'WARN', other: 'ERROR' }) },
      // Prometheus conventions, like prom-client's series: seconds, and _total on counters.
      ...(bindAddress && {
        metrics: {
          prometheus: { bindAddress, countersTotalSuffix: true, unitSuffix: true, useSecondsForDurations: true },
        },
      }),
    },
  });
  if (bindAddress) includeSdkMetricsFrom(`http://${bindAddress}/metrics`);
}
