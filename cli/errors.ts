import { describeError } from '../lib/describe-error';
import { withoutRefusedValues } from '../lib/database-error';
import { EXIT, ServiceError, UsageError, type FailedCommand, type FailureExitCode } from '../lib/errors';

/** What main() does with an error: the exit code, and the message it writes to stderr (without the final newline). */
export interface CliFailure {
  readonly exitCode: FailureExitCode;
  readonly message: string;
}

/** Node's parseArgs throws these for an unknown option, a missing value or a stray positional: bad usage. */
const isParseArgsError = (error: unknown) =>
  String((error as { code?: unknown } | null)?.code ?? '').startsWith('ERR_PARSE_ARGS_');

/**
 * The CLI's one mapping of errors to exit codes and stderr, as `answerInternalErrors` is the internal API's:
 * commands throw, main() looks up the error's own answer (lib/errors.ts). Anything else: 1 and
 * `partner-service: <message>`, with the stack only when `verbose`.
 */
export function failureOf(error: unknown, command: FailedCommand, { verbose = false } = {}): CliFailure {
  const known = isParseArgsError(error) ? new UsageError(describeError(error)) : error;
  if (known instanceof ServiceError) return { exitCode: known.exitCode, message: known.cliMessage(command) };
  const stack = verbose && error instanceof Error && error.stack ? `\n${withoutRefusedValues(error.stack, error)}` : '';
  return { exitCode: EXIT.failure, message: `partner-service: ${describeError(error)}${stack}` };
}
