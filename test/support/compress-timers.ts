// Workflow-side test interceptor for the dev server, which cannot skip time: every timer fires after 1/1000 of
// its duration (10 s, 100 s, 1000 s become 10, 100 and 1000 ms). The workflow still commands the real
// durations and summaries; only the server-side timer is short. Never bundled outside tests.
import type { WorkflowInterceptorsFactory } from '@temporalio/workflow';

export const TIME_COMPRESSION = 1000;

export const interceptors: WorkflowInterceptorsFactory = () => ({
  outbound: [
    {
      startTimer(input, next) {
        return next({ ...input, durationMs: Math.max(1, Math.round(input.durationMs / TIME_COMPRESSION)) });
      },
    },
  ],
});
