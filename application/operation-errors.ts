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
