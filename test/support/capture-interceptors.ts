// Workflow-side test interceptor, bundled into the workflow code: it reports every timer and activity the
// workflow starts (local ones too), and the status query's answer after each of them and when the workflow
// returns, through the `capture` sink.
import { proxySinks, workflowInfo, type Sinks, type WorkflowInterceptorsFactory } from '@temporalio/workflow';
import { getActivator } from '@temporalio/workflow/lib/global-attributes';
import type { WebhookDeliveryStatus } from '../../workflows/types';

export interface CapturedTimer {
  readonly seq: number;
  readonly durationMs: number;
  readonly summary: string | undefined;
}

export interface CapturedActivity {
  readonly seq: number;
  readonly activityType: string;
  readonly args: unknown[];
  readonly startToCloseTimeout: unknown;
  readonly retry: unknown;
  readonly summary: string | undefined;
  readonly taskQueue: string | undefined;
}

export interface CapturedStatus {
  readonly status: WebhookDeliveryStatus;
  readonly searchAttributes: Record<string, unknown>;
}

export interface CaptureSinks extends Sinks {
  capture: {
    timer(timer: CapturedTimer): void;
    activity(activity: CapturedActivity): void;
    status(status: CapturedStatus): void;
  };
}

const { capture } = proxySinks<CaptureSinks>();

/** Calls the registered status query handler, as a query from Temporal UI would. */
function reportStatus(): void {
  const handler = getActivator().queryHandlers.get('webhookStatus')?.handler;
  if (!handler) return;
  const searchAttributes = Object.fromEntries(
    workflowInfo()
      .typedSearchAttributes.getAll()
      .map((p) => [p.key.name, p.value]),
  );
  capture.status({ status: handler() as WebhookDeliveryStatus, searchAttributes });
}

export const interceptors: WorkflowInterceptorsFactory = () => ({
  inbound: [
    {
      async execute(input, next) {
        try {
          return await next(input);
        } finally {
          reportStatus();
        }
      },
    },
  ],
  outbound: [
    {
      startTimer(input, next) {
        capture.timer({ seq: input.seq, durationMs: input.durationMs, summary: input.options?.summary });
        const started = next(input);
        reportStatus();
        return started;
      },
      scheduleActivity(input, next) {
        const { startToCloseTimeout, retry, summary, taskQueue } = input.options;
        capture.activity({
          seq: input.seq,
          activityType: input.activityType,
          args: input.args,
          startToCloseTimeout,
          retry,
          summary,
          taskQueue,
        });
        const scheduled = next(input);
        reportStatus();
        return scheduled;
      },
      scheduleLocalActivity(input, next) {
        const { startToCloseTimeout, retry, summary } = input.options;
        capture.activity({
          seq: input.seq,
          activityType: input.activityType,
          args: input.args,
          startToCloseTimeout,
          retry,
          summary,
          taskQueue: undefined,
        });
        const scheduled = next(input);
        reportStatus();
        return scheduled;
      },
    },
  ],
});
