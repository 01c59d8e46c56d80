import { ConfigError } from '../lib/config-error';
import { EncryptionRequiredError } from '../lib/at-rest';
import { describeError } from '../lib/describe-error';
import { withoutRefusedValues } from '../lib/database-error';
import { formatPathError } from '../lib/validation';
import { PartnerRequestError } from '../application/partner-operator';
import { ErasureNotFoundError, ErasureNotStartedError, ErasureRequestError } from '../application/erasure';
import { TokenRequestError } from '../application/tokens';
import { KeysRequestError } from '../application/key-rotation';
import { WebhookConflictError, WebhookNotFoundError, WebhookStartConflictError } from '../application/operation-errors';
import { WebhookQueryError } from '../application/webhook-filter';
import { AuditQueryError } from '../application/audit-log';
import { WebhookValidationError } from '../application/start-webhook';
import { OperationUnavailableError, TemporalUnavailableError } from '../application/temporal-gateway';
import { TemporalSetupError } from '../temporal/register-search-attributes';
import { EmbeddedPostgresBusyError } from '../db/embedded-postgres';
import { UnsupportedServerError } from '../db/database';
import { DirectoryImportError } from '../directory/import-directory';
import { UnknownCompaniesError } from './apps-store';
import { CommandFailure, UsageError } from './command';

/** Exit codes of every command (docs/cli.md). */
export const EXIT = { success: 0, failure: 1, usage: 2 } as const;

/** What main() does with an error: the exit code, and the message it writes to stderr (without the final newline). */
export interface CliFailure {
  readonly exitCode: typeof EXIT.failure | typeof EXIT.usage;
  readonly message: string;
}

/** The command an error came from; without a name, the program itself (an unknown command). */
export interface FailedCommand {
  readonly name?: string;
  readonly usage: string;
}

const failure = (message: string): CliFailure => ({ exitCode: EXIT.failure, message });

/** Node's parseArgs throws these for an unknown option, a missing value or a stray positional. */
const isParseArgsError = (error: unknown) => String((error as { code?: unknown } | null)?.code ?? '').startsWith('ERR_PARSE_ARGS_');

/**
 * The CLI's one mapping of errors to exit codes and stderr, as `answerInternalErrors` is the internal API's:
 * commands throw, main() maps. Bad usage or input the caller must fix in the command line: 2, one line naming
 * the command, then its usage; invalid configuration: 2 and its one line. Every other expected failure (input
 * files and events, a webhook's state, Temporal or the database refusing): 1 and its one line (a line per JSON
 * path where there are several). Anything else: 1 and `partner-service: <message>`, with the stack only when `verbose`.
 */
export function failureOf(error: unknown, command: FailedCommand, { verbose = false } = {}): CliFailure {
  const usage = (message: string): CliFailure => ({
    exitCode: EXIT.usage,
    message: `partner-service${command.name ? ` ${command.name}` : ''}: ${message}\n\n${command.usage}`,
  });
  if (error instanceof UsageError) return usage(error.message);
  if (isParseArgsError(error)) return usage(describeError(error));
  if (error instanceof WebhookQueryError) return usage(error.errors.map(formatPathError).join('\n'));
  if (error instanceof PartnerRequestError) return usage(error.message);
  // One line, without the usage: the request is clear, one of its values is not.
  if (error instanceof ErasureRequestError || error instanceof TokenRequestError || error instanceof AuditQueryError || error instanceof KeysRequestError) return { exitCode: EXIT.usage, message: `partner-service ${command.name}: ${error.message}` };
  if (error instanceof ErasureNotStartedError || error instanceof ErasureNotFoundError) return failure(error.message);
  // A setting the operator must fix, like a bad argument: 2, its one line (a start error, no usage to show).
  if (error instanceof ConfigError) return { exitCode: EXIT.usage, message: error.message };
  // The same kind of fix: this process needs PAYLOAD_ENCRYPTION_KEYS (send, send-test, worker).
  if (error instanceof EncryptionRequiredError) return { exitCode: EXIT.usage, message: `partner-service ${command.name}: ${error.message}` };
  if (error instanceof CommandFailure) return failure(error.message);
  if (error instanceof DirectoryImportError) return failure(['Import failed; nothing was written.', ...error.problems].join('\n'));
  if (error instanceof WebhookValidationError) return failure(['Invalid webhook event; nothing was sent.', ...error.errors.map(formatPathError)].join('\n'));
  if (error instanceof UnknownCompaniesError) return failure(`partner-service apps create: ${error.message}; nothing was written.`);
  // An ingestion's failures (`webhooks send`): nothing was accepted, and the line says so.
  if (error instanceof WebhookStartConflictError || error instanceof TemporalSetupError) return failure(`Webhook not accepted: ${error.message}`);
  if (error instanceof TemporalUnavailableError && !(error instanceof OperationUnavailableError)) {
    // The one case that must not say "not accepted": the start may have happened.
    if (error.outcomeUnknown) return failure(`Webhook outcome unknown: Temporal did not answer in time (${error.reason}); send it again with the same event_id to learn whether it was accepted.`);
    return failure(`Webhook not accepted: ${error.message}`);
  }
  // An operation's: the webhook does not exist, its state does not allow it, or Temporal did not answer.
  if (error instanceof WebhookNotFoundError || error instanceof WebhookConflictError || error instanceof OperationUnavailableError) return failure(error.message);
  if (error instanceof EmbeddedPostgresBusyError || error instanceof UnsupportedServerError) return failure(`partner-service: ${error.message}`);
  const stack = verbose && error instanceof Error && error.stack ? `\n${withoutRefusedValues(error.stack, error)}` : '';
  return failure(`partner-service: ${describeError(error)}${stack}`);
}
