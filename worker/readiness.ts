import type { ReadinessCheck } from '../api/health';
import type { WebhookWorkerHandle, WorkerState } from './webhook-worker';

const NOT_READY: Record<Exclude<WorkerState, 'polling'>, string> = {
  connecting: 'the worker is not polling Temporal: it is connecting (see the log for why)',
  paused: 'the worker does not poll: no partner endpoint is configured',
  stopped: 'the worker has stopped polling: it is shutting down',
  refused: "Temporal refused the worker's set-up (see the log)",
};

/**
 * Ready only while the worker polls: a load balancer or an orchestrator then knows deliveries flow here. Polling
 * also means Temporal answered and the webhook search attributes are registered, so a workflow start from this
 * process succeeds. `pausedIsReady`: a worker paused for want of a partner is no failure where nothing this
 * process serves needs Temporal (`start` without the internal webhook API).
 */
export function workerPolling(
  worker: Pick<WebhookWorkerHandle, 'state'>,
  { pausedIsReady = false } = {},
): ReadinessCheck {
  return {
    name: 'temporal',
    check() {
      const state = worker.state();
      return state === 'polling' || (state === 'paused' && pausedIsReady)
        ? { state }
        : { state, reason: NOT_READY[state] };
    },
  };
}
