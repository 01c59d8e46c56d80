import type { PreparedWebhook } from '../../../application/start-webhook';
import type { DeliveryLookup, TemporalGateway } from '../../../application/temporal-gateway';
import type { RetryNowResult } from '../../../workflows/types';

/** Wraps a real gateway (a real Temporal server behind it) and records every start the API asks for. */
export class RecordingGateway implements TemporalGateway {
  readonly starts: PreparedWebhook[] = [];

  constructor(private readonly inner: TemporalGateway) {}

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
  release(workflowId: string): Promise<boolean> {
    return this.inner.release(workflowId);
  }

  startErasure(erasureId: string): Promise<void> {
    return this.inner.startErasure(erasureId);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
