import type { BlockedDecision } from '../../lib/delivery';
import type { PreparedWebhook } from '../../temporal/delivery-start';
import type { DeliveryLookup, RunState, TemporalGateway } from '../../temporal/gateway';
import type { RetryNowResult } from '../../workflows/types';

/** Wraps a real gateway (a real Temporal server behind it) and records every start the API asks for. */
export class RecordingGateway implements TemporalGateway {
  /** @param starts shared with the gateways acting for an actor, so a redelivery's start is recorded too. */
  constructor(
    private readonly inner: TemporalGateway,
    readonly starts: PreparedWebhook[] = [],
  ) {}

  start(webhook: PreparedWebhook): Promise<string> {
    this.starts.push(webhook);
    return this.inner.start(webhook);
  }

  status(workflowId: string): Promise<DeliveryLookup> {
    return this.inner.status(workflowId);
  }

  runOf(workflowId: string): Promise<string | undefined> {
    return this.inner.runOf(workflowId);
  }

  runState(workflowId: string): Promise<RunState> {
    return this.inner.runState(workflowId);
  }

  retryNow(workflowId: string): Promise<RetryNowResult> {
    return this.inner.retryNow(workflowId);
  }

  cancel(workflowId: string): Promise<void> {
    return this.inner.cancel(workflowId);
  }
  wakeInOrder(workflowId: string): Promise<boolean> {
    return this.inner.wakeInOrder(workflowId);
  }

  decideBlocked(workflowId: string, decision: BlockedDecision): Promise<void> {
    return this.inner.decideBlocked(workflowId, decision);
  }

  release(workflowId: string): Promise<boolean> {
    return this.inner.release(workflowId);
  }

  startErasure(erasureId: string): Promise<void> {
    return this.inner.startErasure(erasureId);
  }

  startRecovery(recoveryId: string): Promise<void> {
    return this.inner.startRecovery(recoveryId);
  }

  actingFor(actor: string): TemporalGateway {
    return new RecordingGateway(this.inner.actingFor(actor), this.starts);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
