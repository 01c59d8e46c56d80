import { NativeConnection } from '@temporalio/worker';
import type { Config } from '../lib/config';
import type { Logger } from '../lib/logger';
import { connectionFailureInWords } from '../temporal/connection-failure';
import { temporalConnectionOptions } from '../temporal/settings';

export interface BackoffOptions {
  initialDelayMs?: number;
  maxDelayMs?: number;
}

/**
 * Connects the worker to Temporal, retrying with capped exponential backoff until it succeeds or `signal`
 * aborts (then it returns undefined). NativeConnection.connect does not retry by itself. The first failure
 * is logged as one clear warning; later ones only at debug level, so a missing server does not flood logs.
 */
export async function connectWithBackoff(
  config: Config,
  logger: Logger,
  signal: AbortSignal,
  { initialDelayMs = 1000, maxDelayMs = 30_000 }: BackoffOptions = {},
): Promise<NativeConnection | undefined> {
  const options = temporalConnectionOptions(config);
  const { address } = options;
  let delay = initialDelayMs;
  for (let attempt = 1; !signal.aborted; attempt++) {
    try {
      const connection = await connectUnlessAborted(options, signal);
      if (!connection) return undefined;
      if (attempt > 1) logger.info({ address, attempt }, 'connected to Temporal: webhook delivery resumed');
      else
        logger.info(
          {
            address,
            namespace: config.temporal.namespace,
            settings: config.temporal.source,
            tls: options.tls !== undefined,
          },
          'connected to Temporal',
        );
      return connection;
    } catch (error) {
      const reason = connectionFailureInWords(error, config.temporal);
      if (attempt === 1) {
        logger.warn(
          { address, reason },
          `Temporal is unreachable at ${address}: webhook delivery is paused; retrying with backoff (up to ` +
            `every ${maxDelayMs / 1000} s)`,
        );
      } else {
        logger.debug({ address, attempt, reason, nextDelayMs: delay }, 'Temporal still unreachable');
      }
      await sleep(delay, signal);
      delay = Math.min(delay * 2, maxDelayMs);
    }
  }
  return undefined;
}

/**
 * One connection attempt, given up when `signal` aborts first (an address that drops packets holds a connect
 * for seconds): undefined then, and the connection, should it still come, is closed.
 */
async function connectUnlessAborted(
  options: Parameters<typeof NativeConnection.connect>[0],
  signal: AbortSignal,
): Promise<NativeConnection | undefined> {
  if (signal.aborted) return undefined;
  const connecting = NativeConnection.connect(options);
  let onAbort!: () => void;
  const aborted = new Promise<undefined>((resolve) => {
    onAbort = () => resolve(undefined);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    const first = await Promise.race([connecting, aborted]);
    if (!first) void connecting.then((connection) => connection.close()).catch(() => undefined);
    return first;
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
