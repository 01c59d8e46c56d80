import type { PreparedWebhook } from '../../../webhooks/start-webhook';
import type { DeliveryLookup, WebhookStarter } from '../../../webhooks/temporal-starter';

/**
 * Stands in for Temporal where no Temporal server can run: records each start and answers like a server
 * with workflowIdConflictPolicy USE_EXISTING (the same workflow id always yields the same run id).
 */
export class RecordingStarter implements WebhookStarter {
  readonly starts: PreparedWebhook[] = [];
  private readonly runs = new Map<string, string>();
  failWith: Error | undefined;

  async start(webhook: PreparedWebhook): Promise<string> {
    if (this.failWith) throw this.failWith;
    this.starts.push(webhook);
    let runId = this.runs.get(webhook.workflowId);
    if (!runId) {
      runId = `run-${this.runs.size + 1}`;
      this.runs.set(webhook.workflowId, runId);
    }
    return runId;
  }

  async status(workflowId: string): Promise<DeliveryLookup | undefined> {
    if (!this.runs.has(workflowId)) return undefined;
    return { kind: 'running', status: { webhookId: 'ignored', eventId: 'ignored', state: 'waiting', attempts: [], nextAttemptAt: '2025-03-01T09:01:40.000Z' } };
  }

  async close(): Promise<void> {}
}
