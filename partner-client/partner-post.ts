import { partnerSettings, type Config } from '../lib/config';
import type { Logger } from '../lib/logger';
import { webhookAttemptDuration, webhookAttempts } from '../lib/metrics';
import { failedAttempt, type AttemptOutcome, type WebhookPostInput } from '../lib/delivery';
import { postWebhook } from './http-delivery';

/**
 * One POST to the partner with the configuration read at send time, counted and logged: the POST of
 * `deliverAttempt`, also used by `webhooks send-test`, which runs it outside Temporal. `signingKeys`: the live signing
 * secrets' keys (the partner API's and the configuration's); without it, PARTNER_SIGNING_SECRETS alone.
 */
export function createPostToPartner({
  config,
  logger,
  signingKeys,
}: {
  readonly config: () => Config;
  readonly logger: Logger;
  readonly signingKeys?: () => Promise<readonly Buffer[]>;
}) {
  return async function postToPartner(input: WebhookPostInput): Promise<AttemptOutcome> {
    const configured = partnerSettings(config());
    const settings =
      'missing' in configured || !signingKeys ? configured : { ...configured, signingSecrets: await signingKeys() };
    const outcome =
      'missing' in settings
        ? failedAttempt(input.attempt, { errorClass: 'other', errorMessage: `${settings.missing} is not configured` })
        : await postWebhook(settings, input);
    const { httpStatus, errorClass, durationMs, succeeded } = outcome;
    const { event_type, action } = input.event;
    const labels = {
      event_type,
      action,
      outcome: httpStatus !== null ? `${Math.floor(httpStatus / 100)}xx` : (errorClass ?? 'other'),
    };
    webhookAttempts.inc(labels);
    webhookAttemptDuration.observe(labels, durationMs / 1000);
    logger[succeeded ? 'info' : 'warn'](
      { webhookId: input.webhookId, attempt: input.attempt, httpStatus, errorClass, durationMs },
      succeeded ? 'webhook delivered' : 'webhook attempt failed',
    );
    return outcome;
  };
}
