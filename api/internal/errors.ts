import type { Middleware } from 'koa';
import type { PathError } from '../../lib/validation';
import { WebhookValidationError } from '../../application/start-webhook';
import { OperationUnavailableError, TemporalUnavailableError } from '../../application/temporal-gateway';
import { TemporalSetupError } from '../../temporal/register-search-attributes';
import { WebhookConflictError, WebhookNotFoundError, WebhookStartConflictError } from '../../application/operation-errors';
import { WebhookQueryError } from '../../application/webhook-filter';
import { AuditQueryError } from '../../application/audit-log';
import { PartnerRequestError } from '../../application/partner-operator';
import { ErasureNotFoundError, ErasureNotStartedError, ErasureRequestError } from '../../application/erasure';
import { EncryptionRequiredError, StoredTextDecryptionError } from '../../lib/at-rest';
import { SubjectIndexKeyError } from '../../lib/subject-index';
import { IngestionOverloadedError } from '../../application/start-admission';
import { ingestRefusals } from '../../lib/metrics';

/** The one error body of the internal API: `detail` always; `errors` per JSON path; `reason` a code, or Temporal's words. */
export interface InternalErrorBody {
  readonly detail: string;
  readonly errors?: readonly PathError[];
  readonly reason?: string;
}

/** An expected failure of an internal route: thrown, and answered by `answerInternalErrors`. */
export class InternalApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: InternalErrorBody,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(body.detail);
    this.name = 'InternalApiError';
  }
}

/** The internal API's one mapping of the application layer's failures (validation, conflicts, Temporal) to answers. */
function asInternalApiError(error: unknown): InternalApiError | undefined {
  if (error instanceof InternalApiError) return error;
  if (error instanceof WebhookValidationError) return new InternalApiError(400, { detail: 'Invalid webhook event.', errors: error.errors });
  if (error instanceof WebhookQueryError) return new InternalApiError(400, { detail: 'Invalid filter or paging.', errors: error.errors });
  if (error instanceof AuditQueryError) return new InternalApiError(400, { detail: 'Invalid filter or paging.', errors: error.errors });
  if (error instanceof PartnerRequestError) return new InternalApiError(400, { detail: 'Invalid request.', errors: error.errors });
  if (error instanceof ErasureRequestError) return new InternalApiError(400, { detail: 'Invalid request.', errors: error.errors });
  if (error instanceof WebhookNotFoundError || error instanceof ErasureNotFoundError) return new InternalApiError(404, { detail: 'Not found.' });
  // Its own answer, not Temporal's: nothing is wrong with Temporal, and the same request soon succeeds.
  if (error instanceof WebhookStartConflictError) return new InternalApiError(409, { detail: error.message }, { 'Retry-After': '1' });
  if (error instanceof WebhookConflictError) return new InternalApiError(409, { detail: error.message });
  if (error instanceof TemporalSetupError) {
    // Not an outage: retrying cannot help until an operator mends Temporal's configuration.
    return new InternalApiError(500, {
      detail: "The request was not carried out because Temporal refused the service's configuration. An operator must fix it; retrying will not help.",
      reason: error.message,
    });
  }
  if (error instanceof StoredTextDecryptionError) {
    // Not a fault of the request: the data rests under a key the service was started without.
    return new InternalApiError(500, { detail: 'The webhook\'s data cannot be read with the keys this service was started with; an operator must list its key again.', reason: error.message });
  }
  if (error instanceof SubjectIndexKeyError) {
    // This process's configuration, not the request: another replica, or this one once fixed, takes it.
    const detail = `This process cannot index personal data as the deployment does (${error.message}): nothing was stored. An operator must fix its configuration.`;
    return new InternalApiError(503, { detail, reason: error.code }, { 'Retry-After': '30' });
  }
  if (error instanceof ErasureNotStartedError) {
    const body = { detail: error.message, reason: error.reason, ...(error.outcomeUnknown && { erasure_id: error.erasureId }) };
    return new InternalApiError(503, body, { 'Retry-After': '30' });
  }
  if (error instanceof OperationUnavailableError) {
    const detail = error.outcomeUnknown
      ? 'Temporal did not answer in time: the operation may or may not have taken effect. Check the webhook before retrying.'
      : 'Temporal is unavailable: nothing was changed. Retry later.';
    return new InternalApiError(503, { detail, reason: error.reason }, { 'Retry-After': '30' });
  }
  if (error instanceof EncryptionRequiredError) {
    // Not the request's fault, and no retry helps until an operator gives this process the keys.
    const detail = `This deployment stores webhook bodies encrypted (since ${error.encryptedSince.toISOString()}), and this process was started without PAYLOAD_ENCRYPTION_KEYS: nothing was stored. An operator must set the keys.`;
    return new InternalApiError(503, { detail, reason: 'encryption_required' });
  }
  // An ingestion's three 503s, each with its code in `reason` (docs/ingestion.md): only outcome_unknown leaves open whether it was stored.
  if (error instanceof IngestionOverloadedError) {
    const detail = `This api process already has ${error.limit} webhook starts in flight: nothing was stored. Retry after Retry-After with the same event_id.`;
    return new InternalApiError(503, { detail, reason: error.code }, { 'Retry-After': '1' });
  }
  if (error instanceof TemporalUnavailableError && error.outcomeUnknown) {
    const detail = `Temporal did not answer in time (${error.reason}): the webhook may or may not have been accepted. Retry with the same event_id to learn which; it is never delivered twice.`;
    return new InternalApiError(503, { detail, reason: error.code }, { 'Retry-After': '5' });
  }
  if (error instanceof TemporalUnavailableError) {
    const detail = `Temporal is unreachable (${error.reason}): nothing was stored. Retry later with the same event_id.`;
    return new InternalApiError(503, { detail, reason: error.code }, { 'Retry-After': '30' });
  }
  return undefined;
}

/** Counts the ingestion's 503s by their reason (partner_service_ingest_refusals_total); the answer is left to answerInternalErrors. */
export const countIngestRefusals: Middleware = async function countIngestRefusals(_ctx, next) {
  try {
    await next();
  } catch (error) {
    if (error instanceof IngestionOverloadedError || error instanceof TemporalUnavailableError || error instanceof SubjectIndexKeyError) ingestRefusals.inc({ reason: error.code });
    if (error instanceof EncryptionRequiredError) ingestRefusals.inc({ reason: 'encryption_required' });
    throw error;
  }
};

/** Turns every expected failure below it into its status and error body; anything else goes on to the app's 500. */
export const answerInternalErrors: Middleware = async function answerInternalErrors(ctx, next) {
  try {
    await next();
  } catch (error) {
    const answer = asInternalApiError(error);
    if (!answer) throw error;
    ctx.set(answer.headers);
    ctx.status = answer.status;
    ctx.body = answer.body;
  }
};
