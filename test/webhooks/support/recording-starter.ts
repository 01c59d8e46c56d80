import type { PreparedWebhook } from '../../../client/start-webhook';
import type { DeliveryLookup, WebhookStarter } from '../../../client/temporal-starter';
import type { RetryNowResult } from '../../../workflows/types';

/** Wraps a real starter (a real Temporal server behind it) and records every start the API asks for. */
export class RecordingStarter implements WebhookStarter {
  readonly starts: PreparedWebhook[] = [];

  constructor(private readonly inner: WebhookStarter) {}

  start(webhook: PreparedWebhook): Promise<string> {
    this.starts.push(webhook);
    return this.inner.start(webhook);
  }

  status(workflowId: string): Promise<DeliveryLookup> {
    return this.inner.status(workflowId);
  }

  retryNow(workflowId: string): Promise<RetryNowResult> {
    return this.inner.retryNow(workflowId);
  }

  cancel(workflowId: string): Promise<void> {
    return this.inner.cancel(workflowId);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
