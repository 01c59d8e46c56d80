import { DefaultLogger, makeTelemetryFilterString, Runtime, type LogLevel } from '@temporalio/worker';
import type { Logger } from '../lib/logger';

const PINO_METHOD: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/**
 * Routes the Temporal SDK's logs (and core's native logs) through the project's pino logger. Must run before
 * any NativeConnection is made; later calls do nothing. Signals are left to lib/shutdown.ts, which stops the
 * worker in order.
 */
export function installTemporalRuntime(logger: Logger): void {
  if (Runtime._instance !== undefined) return;
  const temporalLogger = logger.child({ component: 'temporal' });
  Runtime.install({
    logger: new DefaultLogger('DEBUG', ({ level, message, meta }) => temporalLogger[PINO_METHOD[level]]({ ...meta }, message)),
    shutdownSignals: [],
    telemetryOptions: { logging: { forward: {}, filter: makeTelemetryFilterString({ core: 'WARN', other: 'ERROR' }) } },
  });
}
