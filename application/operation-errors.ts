// What an operator's request can meet besides an outage: the API answers 404 and 409, the CLI exits 1.

export class WebhookNotFoundError extends Error {
  constructor(readonly webhookId: string) {
    super(`No webhook ${webhookId}.`);
    this.name = 'WebhookNotFoundError';
  }
}

/** The webhook is not in a state the operation applies to (retry-now of a delivered one, say). */
export class WebhookConflictError extends Error {
  constructor(detail: string) {
    super(detail);
    this.name = 'WebhookConflictError';
  }
}

/** The webhook's body was removed (by the retention purge or an erasure): there is no event left to deliver. */
export class PayloadRemovedError extends WebhookConflictError {
  constructor(webhookId: string, removedAt: Date, reason: string) {
    super(`Webhook ${webhookId} has no body to deliver: it was removed by ${reason} at ${removedAt.toISOString()}.`);
    this.name = 'PayloadRemovedError';
  }
}

/**
 * Concurrent calls with one event_id kept changing its row (a start failed and took it back while this call
 * read it): nothing was accepted by this call, and a retry with the same event_id settles it.
 */
export class WebhookStartConflictError extends WebhookConflictError {
  constructor(readonly eventId: string) {
    super(`Concurrent requests with event_id ${eventId} are starting its delivery; retry with the same event_id.`);
    this.name = 'WebhookStartConflictError';
  }
}
