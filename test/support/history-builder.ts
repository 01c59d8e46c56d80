// Builds deliverWebhook histories by hand, in the proto3 JSON shape `historyFromJSON` reads (string event
// ids, long event type names), laid out as a real server records them (compare test/fixtures/real-histories/
// current/): each attempt is a `core_local_activity` marker, and only the records an attempt could not write
// become record activities. Every WorkflowTaskCompleted carries coreUsedFlags, so replay also checks activity
// types and ids.
import { MAX_ATTEMPTS, RETRY_DELAYS_MS, type AttemptOutcome } from '../../lib/delivery';
import { recordsTaskQueue, type DeliverWebhookInput } from '../../workflows/types';
import { DEFAULT_TASK_QUEUE } from '../../lib/config';

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const jsonPayload = (value: unknown) => ({
  metadata: { encoding: b64('json/plain') },
  data: b64(JSON.stringify(value)),
});
const keywordPayload = (value: string) => ({
  metadata: { encoding: b64('json/plain'), type: b64('Keyword') },
  data: b64(JSON.stringify(value)),
});

/** What one attempt's local activity came to: an outcome, or a claim PostgreSQL rejected for good. */
export type AttemptResult = AttemptOutcome | 'claim-rejected';

export const HISTORY_START = Date.parse('2025-03-01T09:00:00.000Z');
/** The message of a claim, or a record, that PostgreSQL rejected for what it contains. */
export const REJECTED_MESSAGE = 'PostgreSQL rejected the record (SQLSTATE 23514): check constraint';

type Json = Record<string, unknown>;

const seconds = (ms: number) => ({ seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 });
const rejectedFailure = {
  message: REJECTED_MESSAGE,
  source: 'TypeScriptSDK',
  applicationFailureInfo: { type: 'RecordRejected', nonRetryable: true },
};

class HistoryBuilder {
  readonly events: Json[] = [];
  private time = HISTORY_START;

  add(type: string, attributes: Json, advanceMs = 5): string {
    this.time += advanceMs;
    const eventId = String(this.events.length + 1);
    const camel = type.toLowerCase().replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
    this.events.push({
      eventId,
      eventTime: new Date(this.time).toISOString(),
      eventType: `EVENT_TYPE_${type}`,
      [`${camel}EventAttributes`]: attributes,
    });
    return eventId;
  }

  /** Scheduled and started: the task an attempt runs in. */
  startWorkflowTask(): { scheduled: string; started: string } {
    const scheduled = this.add('WORKFLOW_TASK_SCHEDULED', {
      taskQueue: { name: DEFAULT_TASK_QUEUE },
      startToCloseTimeout: '10s',
      attempt: 1,
    });
    const started = this.add('WORKFLOW_TASK_STARTED', {
      scheduledEventId: scheduled,
      identity: 'fixture',
      requestId: `wft-${scheduled}`,
    });
    return { scheduled, started };
  }

  /** Completes a started task after `durationMs` (the attempt it ran); returns the completed event's id. */
  completeWorkflowTask({ scheduled, started }: { scheduled: string; started: string }, durationMs = 5): string {
    return this.add(
      'WORKFLOW_TASK_COMPLETED',
      {
        scheduledEventId: scheduled,
        startedEventId: started,
        identity: 'fixture',
        sdkMetadata: { coreUsedFlags: [1, 2, 3] },
      },
      durationMs,
    );
  }

  workflowTask(): string {
    return this.completeWorkflowTask(this.startWorkflowTask());
  }

  upsertStatus(completed: string, status: string): void {
    this.add('UPSERT_WORKFLOW_SEARCH_ATTRIBUTES', {
      workflowTaskCompletedEventId: completed,
      searchAttributes: { indexedFields: { WebhookStatus: keywordPayload(status) } },
    });
  }

  /** The marker sdk-core records for a local activity: its identity in `data`, then its result or failure. */
  attemptMarker(completed: string, seq: number, result: AttemptResult, needsRecord: boolean): void {
    const at = seconds(this.time);
    const data = {
      seq,
      attempt: 1,
      activity_id: String(seq),
      activity_type: 'deliverAttempt',
      complete_time: at,
      backoff: null,
      original_schedule_time: at,
    };
    const details: Json = { data: { payloads: [jsonPayload(data)] } };
    if (result !== 'claim-rejected') details.result = { payloads: [jsonPayload({ outcome: result, needsRecord })] };
    this.add('MARKER_RECORDED', {
      markerName: 'core_local_activity',
      details,
      workflowTaskCompletedEventId: completed,
      ...(result === 'claim-rejected' && { failure: rejectedFailure }),
    });
  }

  /** Record activities' inputs are left out: replay never compares activity arguments. */
  scheduleRecord(completed: string, seq: number, type: 'recordAttempt' | 'recordOutcome'): string {
    return this.add('ACTIVITY_TASK_SCHEDULED', {
      activityId: String(seq),
      activityType: { name: type },
      taskQueue: { name: recordsTaskQueue(DEFAULT_TASK_QUEUE) },
      workflowTaskCompletedEventId: completed,
    });
  }

  /** Completes a record, or fails it non-retryably as a row PostgreSQL rejects. */
  finishRecord(scheduled: string, rejected: boolean): void {
    const started = this.add('ACTIVITY_TASK_STARTED', { scheduledEventId: scheduled, identity: 'fixture', attempt: 1 });
    if (!rejected) {
      this.add('ACTIVITY_TASK_COMPLETED', { scheduledEventId: scheduled, startedEventId: started }, 20);
      return;
    }
    this.add('ACTIVITY_TASK_FAILED', {
      scheduledEventId: scheduled,
      startedEventId: started,
      failure: rejectedFailure,
      retryState: 'RETRY_STATE_NON_RETRYABLE_FAILURE',
    });
  }
}

export interface DeliveryHistoryOptions {
  readonly workflowId: string;
  readonly input: DeliverWebhookInput;
  /** The attempts' results in order; at most 4. */
  readonly attempts: readonly AttemptResult[];
  /** No attempt could write its own record (PostgreSQL slower than 5 s): the workflow writes each one. */
  readonly unrecorded?: boolean;
  /** ... and PostgreSQL rejects those records (non-retryably): the workflow must still finish. */
  readonly recordsRejected?: boolean;
  /**
   * Where a cut-short history ends: 'waiting' right after the last listed attempt failed and its retry timer
   * started; 'sending' right after the timer fired, with the next attempt's workflow task started.
   */
  readonly cut?: 'waiting' | 'sending';
}

/** The search attributes the start sets. */
export function startAttributes(input: DeliverWebhookInput, companyId?: string): Record<string, string> {
  return {
    WebhookEventType: input.event.event_type,
    WebhookAction: input.event.action,
    ...(companyId ? { CompanyId: companyId } : {}),
  };
}

/** A history of deliverWebhook as a worker would have written it, for the given attempt results. */
export function buildDeliveryHistory(options: DeliveryHistoryOptions, companyId?: string): { events: Json[] } {
  const { input, attempts } = options;
  const h = new HistoryBuilder();
  const indexedFields = Object.fromEntries(
    Object.entries(startAttributes(input, companyId)).map(([key, value]) => [key, keywordPayload(value)]),
  );
  h.add('WORKFLOW_EXECUTION_STARTED', {
    workflowType: { name: 'deliverWebhook' },
    taskQueue: { name: DEFAULT_TASK_QUEUE },
    input: { payloads: [jsonPayload(input)] },
    workflowTaskTimeout: '10s',
    originalExecutionRunId: 'fixture-run-id',
    firstExecutionRunId: 'fixture-run-id',
    attempt: 1,
    identity: 'fixture',
    searchAttributes: { indexedFields },
  });
  let seq = 1;
  let task = h.startWorkflowTask();
  for (let i = 0; i < attempts.length; i++) {
    const attempt = i + 1;
    const result = attempts[i];
    const completed = h.completeWorkflowTask(task, result === 'claim-rejected' ? 5 : result.durationMs);
    if (attempt > 1) h.upsertStatus(completed, 'sending');
    // Records the attempt could not write itself; a rejected claim records nothing.
    const needsRecord = Boolean(options.unrecorded) && result !== 'claim-rejected';
    h.attemptMarker(completed, seq++, result, needsRecord);
    const done = (result !== 'claim-rejected' && result.succeeded) || attempt === MAX_ATTEMPTS;
    const records = needsRecord ? [h.scheduleRecord(completed, seq++, 'recordAttempt')] : [];
    if (needsRecord && done) records.push(h.scheduleRecord(completed, seq++, 'recordOutcome'));
    if (done) {
      const delivered = result !== 'claim-rejected' && result.succeeded;
      // WebhookStatus appears with the first failure: a first-try delivery completes without an upsert.
      if (attempt > 1 || !delivered) h.upsertStatus(completed, delivered ? 'delivered' : 'failed');
      if (!records.length) {
        h.add('WORKFLOW_EXECUTION_COMPLETED', { workflowTaskCompletedEventId: completed });
        return { events: h.events };
      }
      for (const record of records) h.finishRecord(record, Boolean(options.recordsRejected));
      h.add('WORKFLOW_EXECUTION_COMPLETED', { workflowTaskCompletedEventId: h.workflowTask() });
      return { events: h.events };
    }
    h.upsertStatus(completed, 'waiting');
    const delay = RETRY_DELAYS_MS[i];
    const timer = h.add('TIMER_STARTED', {
      timerId: String(attempt),
      startToFireTimeout: `${delay / 1000}s`,
      workflowTaskCompletedEventId: completed,
    });
    for (const record of records) {
      h.finishRecord(record, Boolean(options.recordsRejected));
      h.workflowTask();
    }
    if (i === attempts.length - 1 && options.cut === 'waiting') return { events: h.events };
    h.add('TIMER_FIRED', { timerId: String(attempt), startedEventId: timer }, delay);
    task = h.startWorkflowTask();
    if (i === attempts.length - 1 && options.cut === 'sending') return { events: h.events };
  }
  throw new Error('a history that is not cut short needs a successful or a fourth attempt');
}
