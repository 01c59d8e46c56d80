import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { request, type Dispatcher } from 'undici';
import { envelopeBody } from '../events/envelope';
import type { PartnerSettings } from '../lib/config';
import { failedAttempt, type AttemptOutcome, type WebhookPostInput } from '../lib/delivery';
import { classifyRequestError } from './error-class';
import { readBodyPrefix } from './response-body';
import { retryAfterMs } from './retry-after';
import { webhookHeaders } from '../events/delivery-headers';
import { webhookSignature } from '../events/webhook-signature';
import { SERVICE_TRACER, tracingEnabled } from '../lib/tracing';

/**
 * Exactly one POST of the envelope: redirects are not followed, 2XX is success and anything else (3XX to
 * 6XX, network errors, the deadline) is a classified failure. Never throws for an HTTP or network outcome.
 */
export async function postWebhook(
  settings: PartnerSettings,
  input: WebhookPostInput,
  dispatcher?: Dispatcher,
): Promise<AttemptOutcome> {
  if (!tracingEnabled()) return postOnce(settings, input, dispatcher);
  // The partner's host and port only: the endpoint's path or query may hold a credential.
  const { hostname, port, protocol } = new URL(settings.endpoint);
  const attributes = {
    'http.request.method': 'POST',
    'server.address': hostname,
    'server.port': Number(port) || (protocol === 'https:' ? 443 : 80),
  };
  return trace
    .getTracer(SERVICE_TRACER)
    .startActiveSpan('POST', { kind: SpanKind.CLIENT, attributes }, async (span) => {
      try {
        const outcome = await postOnce(settings, input, dispatcher);
        if (outcome.httpStatus !== null) span.setAttribute('http.response.status_code', outcome.httpStatus);
        if (!outcome.succeeded)
          span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.errorClass ?? `HTTP ${outcome.httpStatus}` });
        return outcome;
      } finally {
        span.end();
      }
    });
}

async function postOnce(
  settings: PartnerSettings,
  input: WebhookPostInput,
  dispatcher?: Dispatcher,
): Promise<AttemptOutcome> {
  const startedAtMs = Date.now();
  // Monotonic, so a clock step cannot make a duration negative (the column forbids that, and a record
  // that can never be written would be retried forever).
  const startedTick = performance.now();
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), Math.min(settings.timeoutMs, input.timeoutMs ?? Infinity));
  const startedAt = new Date(startedAtMs).toISOString();
  const elapsedMs = () => Math.round(performance.now() - startedTick);
  const body = envelopeBody(input.event);
  const webhookId = input.webhookIdHeader ?? input.webhookId;
  const headers = webhookHeaders(settings.token, webhookId, startedAtMs, input.ordering);
  if (settings.signingSecrets.length) {
    headers['webhook-signature'] = webhookSignature(
      settings.signingSecrets,
      webhookId,
      headers['webhook-timestamp'],
      body,
    );
  }
  // The partner continues the delivery's trace from `traceparent` (the POST span's, when tracing is on).
  propagation.inject(context.active(), headers);
  try {
    const response = await request(settings.endpoint, {
      method: 'POST',
      headers,
      body,
      signal: deadline.signal,
      dispatcher,
    });
    const encoding = response.headers['content-encoding'];
    const responseBody = await readBodyPrefix(response.body, Array.isArray(encoding) ? encoding[0] : encoding);
    const succeeded = response.statusCode >= 200 && response.statusCode < 300;
    const outcome = {
      attempt: input.attempt,
      startedAt,
      durationMs: elapsedMs(),
      httpStatus: response.statusCode,
      errorClass: null,
      errorMessage: null,
      responseBody,
      succeeded,
    };
    const retryAfter = retryAfterMs(response.statusCode, response.headers['retry-after'], Date.now());
    return retryAfter === undefined ? outcome : { ...outcome, retryAfterMs: retryAfter };
  } catch (error) {
    return failedAttempt(input.attempt, {
      ...classifyRequestError(error, deadline.signal.aborted),
      startedAt,
      durationMs: elapsedMs(),
    });
  } finally {
    clearTimeout(timer);
  }
}
