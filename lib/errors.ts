import { formatPathError, type PathError } from './validation';
import type { IngestRefusalReason } from './vocabulary';

// Every error the internal API or the CLI answers, each with its own answer: the HTTP status, headers and body
// (api/internal/errors.ts looks them up), and the exit code and stderr lines (cli/errors.ts looks them up).
// The listings and SCIM answer in their own formats (DRF, RFC 7644): their errors stay with their routers.

/**
 * The one error body of the internal API: `detail` always; `errors` per JSON path; `reason` a code, or Temporal's
 * words.
 */
export interface InternalErrorBody {
  readonly detail: string;
  readonly errors?: readonly PathError[];
  readonly reason?: string;
  readonly erasure_id?: string;
  readonly running_recovery_id?: string;
  /** The feed's 410: when its first event (where a reader without a cursor starts) was accepted; null: none. */
  readonly oldest_available_at?: string | null;
}

/** Exit codes of every command (docs/cli.md). */
export const EXIT = { success: 0, failure: 1, usage: 2 } as const;
/** 2: the caller must fix the command line or the configuration; 1: every other expected failure. */
export type FailureExitCode = typeof EXIT.failure | typeof EXIT.usage;

/** The command an error came from; without a name, the program itself (an unknown command). */
export interface FailedCommand {
  readonly name?: string;
  readonly usage: string;
}

const commandPrefix = (command: FailedCommand) => `partner-service${command.name ? ` ${command.name}` : ''}`;

/** An expected failure, with what the internal API and the CLI answer for it. */
export abstract class ServiceError extends Error {
  /** The internal API's status; 500 for the few that only a misconfigured process meets. */
  readonly httpStatus: number = 500;
  readonly exitCode: FailureExitCode = EXIT.failure;

  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }

  apiHeaders(): Readonly<Record<string, string>> {
    return {};
  }

  apiBody(): InternalErrorBody {
    return { detail: this.message };
  }

  /** What the CLI writes to stderr, without the final newline. */
  cliMessage(_command: FailedCommand): string {
    return this.message;
  }

  /** The reason `partner_service_ingest_refusals_total` counts when an ingestion is refused with this error. */
  ingestRefusal(): IngestRefusalReason | undefined {
    return undefined as IngestRefusalReason | undefined;
  }
}

/** An answer of the internal API's own middleware (authentication, media type, body): it has no CLI side. */
export class InternalApiError extends ServiceError {
  constructor(
    readonly httpStatus: number,
    readonly body: InternalErrorBody,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(body.detail);
  }

  apiHeaders() {
    return this.headers;
  }

  apiBody() {
    return this.body;
  }
}

/** Bad command-line usage: exit 2, the message naming the command, then its usage. */
export class UsageError extends ServiceError {
  readonly exitCode = EXIT.usage;

  cliMessage(command: FailedCommand) {
    return `${commandPrefix(command)}: ${this.message}\n\n${command.usage}`;
  }
}

/** The `detail` of a 400 for a filter or paging value (the delivery log, the audit trail). */
export const FILTER_DETAIL = 'Invalid filter or paging.';

/**
 * A request whose values do not hold up (a filter, paging, a pause, an erasure's subject, a token's name, a
 * reseal without keys): the API answers 400 with one error per field, the CLI exits 2 with one line. Nothing
 * was written.
 */
export class InvalidRequestError extends ServiceError {
  readonly httpStatus = 400;
  readonly exitCode = EXIT.usage;

  readonly errors: readonly PathError[];

  /** `problems`: one per JSON path, or one line about the command line's own arguments. */
  constructor(
    problems: readonly PathError[] | string,
    readonly detail = 'Invalid request.',
  ) {
    super(typeof problems === 'string' ? problems : problems.map(formatPathError).join('; '));
    this.errors = typeof problems === 'string' ? [] : problems;
  }

  apiBody(): InternalErrorBody {
    return { detail: this.detail, errors: this.errors };
  }

  cliMessage(command: FailedCommand) {
    return `${commandPrefix(command)}: ${this.message}`;
  }
}

/** A webhook event that does not validate: 400 with one error per field; the CLI exits 1 (the event is a file). */
export class WebhookValidationError extends ServiceError {
  readonly httpStatus = 400;

  constructor(readonly errors: readonly PathError[]) {
    super(`Invalid webhook event: ${errors.map(formatPathError).join('; ')}`);
  }

  apiBody(): InternalErrorBody {
    return { detail: 'Invalid webhook event.', errors: this.errors };
  }

  cliMessage() {
    return ['Invalid webhook event; nothing was sent.', ...this.errors.map(formatPathError)].join('\n');
  }
}

/** No webhook, erasure or partner recovery with that id (or not the partner app's): 404. */
export class NotFoundError extends ServiceError {
  readonly httpStatus = 404;

  constructor(
    readonly kind: 'webhook' | 'erasure' | 'signing secret' | 'recovery',
    readonly id: string,
  ) {
    super(`No ${kind} ${id}.`);
  }

  apiBody(): InternalErrorBody {
    return { detail: 'Not found.' };
  }
}

/**
 * An ordering key with no lane: 404. Its message never quotes the key, which may name a candidate
 * (`candidate:<id>`): the refusal is audited, and the audit trail is append-only, out of any erasure's reach.
 */
export class UnknownOrderingKeyError extends ServiceError {
  readonly httpStatus = 404;

  constructor() {
    super('No lane for this ordering key: none of its webhooks is recorded, or its key was erased.');
  }

  apiBody(): InternalErrorBody {
    return { detail: 'Not found.' };
  }
}

/** The webhook is not in a state the operation applies to (retry-now of a delivered one, say): 409. */
export class WebhookConflictError extends ServiceError {
  readonly httpStatus = 409;
}

/**
 * A signing secret the partner API may not delete (docs/partners.md, "Signing secrets"): the current one, which no
 * newer secret replaces (`current_secret`), or one of PARTNER_SIGNING_SECRETS (`configuration_secret`): 409.
 */
export class SigningSecretConflictError extends ServiceError {
  readonly httpStatus = 409;

  constructor(readonly reason: 'current_secret' | 'configuration_secret') {
    super(
      reason === 'current_secret'
        ? 'This is the current signing secret, which no newer secret replaces: the endpoint always keeps one to sign ' +
            'with. Create a new secret first, then delete this one.'
        : 'This signing secret comes from the configuration (PARTNER_SIGNING_SECRETS): the API cannot delete it. ' +
            'An operator removes it from PARTNER_SIGNING_SECRETS.',
    );
  }

  apiBody(): InternalErrorBody {
    return { detail: this.message, reason: this.reason };
  }
}

/** A partner app asked for a recovery while one of its own runs: 409 naming it. */
export class RecoveryRunningError extends ServiceError {
  readonly httpStatus = 409;

  constructor(readonly runningId: string) {
    super(`Recovery ${runningId} is running: one recovery runs per app at once. Cancel it or wait for its end.`);
  }

  apiBody(): InternalErrorBody {
    return { detail: this.message, running_recovery_id: this.runningId };
  }
}

/** The webhook's body was removed (by the retention purge or an erasure): there is no event left to deliver. */
export class PayloadRemovedError extends WebhookConflictError {
  constructor(webhookId: string, removedAt: Date, reason: string) {
    super(`Webhook ${webhookId} has no body to deliver: it was removed by ${reason} at ${removedAt.toISOString()}.`);
  }
}

/** A redelivery refused because the event's signed links are past their deadline; 409 unless allowed. */
export class ExpiredLinksError extends WebhookConflictError {
  constructor(expired: readonly { kind: string; expiresAt: Date }[], acceptedAt: Date) {
    const deadlines = expired.map(({ kind, expiresAt }) => `${kind} expired at ${expiresAt.toISOString()}`).join(', ');
    super(
      `The event's signed links are past their deadline (${deadlines}; the event was accepted at ` +
        `${acceptedAt.toISOString()}), ` +
        'so a redelivery would send dead links. Redeliver with allow_expired_links (CLI: ' +
        '--allow-expired-links) to send them anyway.',
    );
  }
}

/**
 * Concurrent calls with one event_id kept changing its row (a start failed and took it back while this call
 * read it): nothing was accepted by this call, and a retry with the same event_id settles it. Its own 409, not
 * Temporal's 503: nothing is wrong with Temporal, and the same request soon succeeds.
 */
export class WebhookStartConflictError extends WebhookConflictError {
  constructor(readonly eventId: string) {
    super(`Concurrent requests with event_id ${eventId} are starting its delivery; retry with the same event_id.`);
  }

  apiHeaders() {
    return { 'Retry-After': '1' };
  }

  cliMessage() {
    return `Webhook not accepted: ${this.message}`;
  }
}

/**
 * A partner's resume while an operator's pause is in force: a partner's resume never ends an operator's pause, so
 * nothing changed (the partner's own pause, if any, stays until the operator's resume ends both). 409.
 */
export class PausedByOperatorError extends ServiceError {
  readonly httpStatus = 409;

  constructor(operatorReason: string) {
    super(
      `An operator paused deliveries (${JSON.stringify(operatorReason)}): only the operator's resume ends it, ` +
        'and it ends your pause too.',
    );
  }

  apiBody(): InternalErrorBody {
    return { detail: this.message, reason: 'paused_by_operator' };
  }
}

/** Temporal refused the service's set-up: not an outage; an operator must act, and retrying changes nothing. */
export class TemporalSetupError extends ServiceError {
  apiBody(): InternalErrorBody {
    return {
      detail:
        "The request was not carried out because Temporal refused the service's configuration. An operator must " +
        'fix it; retrying will not help.',
      reason: this.message,
    };
  }

  cliMessage() {
    return `Webhook not accepted: ${this.message}`;
  }
}

/**
 * Temporal did not answer: `reason` says how; with `outcomeUnknown` it was reached but silent past the
 * deadline, so what was asked may or may not have happened.
 */
abstract class TemporalOutageError extends ServiceError {
  readonly httpStatus = 503;

  constructor(
    readonly reason: string,
    readonly outcomeUnknown = false,
  ) {
    super(`Temporal is unavailable: ${reason}`);
  }
}

/**
 * Temporal could not be reached, or did not answer a webhook's start: the webhook was not accepted, or, with
 * `outcomeUnknown`, it may have been (the caller keeps its record, and a retry with the same event_id finds
 * the run). An ingestion's 503s each carry their code in `reason` (docs/ingestion.md).
 */
export class TemporalUnavailableError extends TemporalOutageError {
  /** The case in one code (an ingestion's 503 `reason`): nothing happened, or it may have. */
  get code(): Exclude<IngestRefusalReason, 'overloaded'> {
    return this.outcomeUnknown ? 'outcome_unknown' : 'temporal_unreachable';
  }

  apiHeaders() {
    return { 'Retry-After': this.outcomeUnknown ? '5' : '30' };
  }

  apiBody(): InternalErrorBody {
    const detail = this.outcomeUnknown
      ? `Temporal did not answer in time (${this.reason}): the webhook may or may not have been accepted. Retry ` +
        `with the same event_id to learn which; it is never delivered twice.`
      : `Temporal is unreachable (${this.reason}): nothing was stored. Retry later with the same event_id.`;
    return { detail, reason: this.code };
  }

  cliMessage() {
    // The one case that must not say "not accepted": the start may have happened.
    if (this.outcomeUnknown)
      return (
        `Webhook outcome unknown: Temporal did not answer in time (${this.reason}); send it again with the same ` +
        `event_id to learn whether it was accepted.`
      );
    return `Webhook not accepted: ${this.message}`;
  }

  ingestRefusal() {
    return this.code;
  }
}

/**
 * Temporal's outage during an operator's operation (retry-now, cancel, redeliver) rather than an ingestion:
 * without `outcomeUnknown` nothing changed; with it, the operation may or may not have taken effect.
 */
export class OperationUnavailableError extends TemporalOutageError {
  apiHeaders() {
    return { 'Retry-After': '30' };
  }

  apiBody(): InternalErrorBody {
    const detail = this.outcomeUnknown
      ? 'Temporal did not answer in time: the operation may or may not have taken effect. Check the webhook ' +
        'before retrying.'
      : 'Temporal is unavailable: nothing was changed. Retry later.';
    return { detail, reason: this.reason };
  }
}

/** This api process already has its bound of webhook starts in flight: nothing was stored, retrying is safe. */
export class IngestionOverloadedError extends ServiceError {
  readonly httpStatus = 503;
  readonly code = 'overloaded' as const;

  constructor(readonly limit: number) {
    super(`This api process already has ${limit} webhook starts in flight (INGEST_MAX_STARTS_IN_FLIGHT)`);
  }

  apiHeaders() {
    return { 'Retry-After': '1' };
  }

  apiBody(): InternalErrorBody {
    return {
      detail:
        `This api process already has ${this.limit} webhook starts in flight: nothing was stored. Retry after ` +
        `Retry-After with the same event_id.`,
      reason: this.code,
    };
  }

  ingestRefusal() {
    return this.code;
  }
}

/** An erasure whose workflow did not start: nothing was recorded, or (`outcomeUnknown`) it may have started. */
export class ErasureNotStartedError extends ServiceError {
  readonly httpStatus = 503;

  constructor(
    readonly erasureId: string,
    readonly reason: string,
    readonly outcomeUnknown: boolean,
  ) {
    super(
      outcomeUnknown
        ? `Erasure ${erasureId} may or may not have started: Temporal did not answer in time (${reason}). Check ` +
            `its status before sending the request again.`
        : `The erasure was not started, since Temporal is unavailable (${reason}): nothing was recorded or ` +
            `erased. Send the request again later.`,
    );
  }

  apiHeaders() {
    return { 'Retry-After': '30' };
  }

  apiBody(): InternalErrorBody {
    return { detail: this.message, reason: this.reason, ...(this.outcomeUnknown && { erasure_id: this.erasureId }) };
  }
}

/** The environment does not describe a valid configuration: exit 2 and its one line. */
export class ConfigError extends ServiceError {
  readonly exitCode = EXIT.usage;
}

/**
 * This process cannot index personal data as the deployment does: it has no key, another key under a known id,
 * or lacks a key rows are indexed under. Refused rather than finding nobody. Not the request: another replica,
 * or this one once fixed, takes it (503).
 */
export class SubjectIndexKeyError extends ConfigError {
  readonly httpStatus = 503;
  /** The ingestion refusal's reason code (lib/vocabulary.ts). */
  readonly code = 'subject_index_key' as const;

  apiHeaders() {
    return { 'Retry-After': '30' };
  }

  apiBody(): InternalErrorBody {
    return {
      detail:
        `This process cannot index personal data as the deployment does (${this.message}): nothing was stored. An ` +
        `operator must fix its configuration.`,
      reason: this.code,
    };
  }

  ingestRefusal() {
    return this.code;
  }
}

/**
 * A keyed deployment (PostgreSQL records since when) and a process without keys: it must not write a body or an
 * excerpt in clear, so it writes nothing. No retry helps until an operator gives this process the keys.
 */
export class EncryptionRequiredError extends ServiceError {
  readonly httpStatus = 503;
  readonly exitCode = EXIT.usage;

  constructor(readonly encryptedSince: Date) {
    super(
      `this deployment stores webhook bodies and response excerpts encrypted (since ` +
        `${encryptedSince.toISOString()}), and PAYLOAD_ENCRYPTION_KEYS is not set in this process: nothing was ` +
        `written`,
    );
  }

  apiBody(): InternalErrorBody {
    const detail =
      `This deployment stores webhook bodies encrypted (since ${this.encryptedSince.toISOString()}), and this ` +
      `process was started without PAYLOAD_ENCRYPTION_KEYS: nothing was stored. An operator must set the keys.`;
    return { detail, reason: 'encryption_required' };
  }

  cliMessage(command: FailedCommand) {
    return `${commandPrefix(command)}: ${this.message}`;
  }

  ingestRefusal() {
    return 'encryption_required' as const;
  }
}

/** A stored text that cannot be opened: its key is no longer listed, or the ciphertext fails its tag. */
export class StoredTextDecryptionError extends ServiceError {
  apiBody(): InternalErrorBody {
    // Not a fault of the request: the data rests under a key the service was started without.
    return {
      detail:
        "The webhook's data cannot be read with the keys this service was started with; an operator must list its " +
        'key again.',
      reason: this.message,
    };
  }

  cliMessage() {
    return `partner-service: ${this.message}`;
  }
}

/** A command's expected failure that no other class names (no partner endpoint, no such app): its message, exit 1. */
export class CommandFailure extends ServiceError {}

/** Input that cannot be imported; `problems` are `json.path: message` lines, the last saying how many more. */
export class DirectoryImportError extends ServiceError {
  readonly problems: string[];

  constructor(all: string[], maxProblems = 100) {
    super(`invalid directory snapshot: ${all.length} problem(s)`);
    this.problems =
      all.length > maxProblems
        ? [...all.slice(0, maxProblems), `… and ${all.length - maxProblems} more problem(s)`]
        : all;
  }

  cliMessage() {
    return ['Import failed; nothing was written.', ...this.problems].join('\n');
  }
}

/** `apps create` names companies the directory does not hold. */
export class UnknownCompaniesError extends ServiceError {
  constructor(readonly companyIds: readonly string[]) {
    super(`unknown company ${companyIds.map((id) => JSON.stringify(id)).join(', ')}`);
  }

  cliMessage() {
    return `partner-service apps create: ${this.message}; nothing was written.`;
  }
}

/** The database cannot be used: the embedded server's directory is busy, or the server is too old. */
export class DatabaseUnusableError extends ServiceError {
  cliMessage() {
    return `partner-service: ${this.message}`;
  }
}
