import type { Config } from '../lib/config';

export type LogLevel = Config['LOG_LEVEL'];

/** The levels that already show more than `--verbose` asks for. */
const BELOW_INFO: readonly LogLevel[] = ['debug', 'trace'];

/**
 * The level a command logs at. A one-shot command (logs on stderr, its result on stdout) logs warnings and
 * errors only, so that a success prints its result and nothing else, unless LOG_LEVEL is set; a service logs
 * at LOG_LEVEL (default info). `--verbose` lowers either to info (debug and trace stay as they are).
 */
export function commandLogLevel({
  configured,
  oneShot,
  verbose,
}: {
  configured: LogLevel | undefined;
  oneShot: boolean;
  verbose: boolean;
}): LogLevel {
  const level = configured ?? (oneShot ? 'warn' : 'info');
  return verbose && !BELOW_INFO.includes(level) ? 'info' : level;
}
