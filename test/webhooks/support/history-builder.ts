// Builds deliverWebhook histories by hand, in the proto3 JSON shape `historyFromJSON` reads (string event
// ids, long event type names). Every WorkflowTaskCompleted carries coreUsedFlags, so replay also checks
// activity types and ids.
import { MAX_ATTEMPTS, RETRY_DELAYS_MS, recordsTaskQueue, type AttemptOutcome, type DeliverWebhookInput } from '../../../workflows/types';

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const jsonPayload = (value: unknown) => ({ metadata: { encoding: b64('json/plain') }, data: b64(JSON.stringify(value)) });
const keywordPayload = (value: string) => ({
  metadata: { encoding: b64('json/plain'), type: b64('Keyword') },
  data: b64(JSON.stringify(value)),
});

/** What one send activity came to in the history: an outcome, or the worker lost mid-attempt (timeout). */
export type SendResult = AttemptOutcome | 'worker-lost';

export const HISTORY_START = Date.parse('2025-03-01T09:00:00.000Z');
export const TASK_QUEUE = 'partner-webhooks';

type Json = Record<string, unknown>;

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

  now(): number {
    return this.time;
  }

  /** Scheduled, started and completed; returns the completed event's id. */
  workflowTask(): string {
    const scheduled = this.add('WORKFLOW_TASK_SCHEDULED', { taskQueue: { name: TASK_QUEUE }, startToCloseTimeout: '10s', attempt: 1 });
    const started = this.add('WORKFLOW_TASK_STARTED', { scheduledEventId: scheduled, identity: 'fixture', requestId: `wft-${scheduled}` });
    return this.add('WORKFLOW_TASK_COMPLETED', {
      scheduledEventId: scheduled,
      startedEventId: started,
      identity: 'fixture',
      sdkMetadata: { coreUsedFlags: [1, 2, 3] },
    });
  }

  upsertStatus(completed: string, status: string, identity?: Record<string, string>): void {
    const fields: Json = {};
    for (const [key, value] of Object.entries({ ...identity, WebhookStatus: status })) fields[key] = keywordPayload(value);
    this.add('UPSERT_WORKFLOW_SEARCH_ATTRIBUTES', { workflowTaskCompletedEventId: completed, searchAttributes: { indexedFields: fields } });
  }

  /** Record activities' inputs are left out: replay never compares activity arguments. */
  scheduleActivity(completed: string, seq: number, type: string, input?: unknown): string {
    return this.add('ACTIVITY_TASK_SCHEDULED', {
      activityId: String(seq),
      activityType: { name: type },
      taskQueue: { name: type === 'sendWebhook' ? TASK_QUEUE : recordsTaskQueue(TASK_QUEUE) },
      ...(input === undefined ? {} : { input: { payloads: [jsonPayload(input)] } }),
      workflowTaskCompletedEventId: completed,
    });
  }

  completeActivity(scheduled: string, result: unknown, durationMs = 20): void {
    const started = this.add('ACTIVITY_TASK_STARTED', { scheduledEventId: scheduled, identity: 'fixture', attempt: 1 });
    this.add(
      'ACTIVITY_TASK_COMPLETED',
      { scheduledEventId: scheduled, startedEventId: started, ...(result === undefined ? {} : { result: { payloads: [jsonPayload(result)] } }) },
      durationMs,
    );
  }

  /** A non-retryable failure, as recordAttempt and recordOutcome report a row PostgreSQL rejects. */
  rejectActivity(scheduled: string): void {
    const started = this.add('ACTIVITY_TASK_STARTED', { scheduledEventId: scheduled, identity: 'fixture', attempt: 1 });
    this.add('ACTIVITY_TASK_FAILED', {
      scheduledEventId: scheduled,
      startedEventId: started,
      failure: {
        message: 'PostgreSQL rejected the record (SQLSTATE 23514): check constraint',
        applicationFailureInfo: { type: 'RecordRejected', nonRetryable: true },
      },
      retryState: 'RETRY_STATE_NON_RETRYABLE_FAILURE',
    });
  }

  timeOutActivity(scheduled: string, durationMs: number): void {
    const started = this.add('ACTIVITY_TASK_STARTED', { scheduledEventId: scheduled, identity: 'fixture', attempt: 1 });
    this.add(
      'ACTIVITY_TASK_TIMED_OUT',
      {
        scheduledEventId: scheduled,
        startedEventId: started,
        failure: { message: 'activity StartToClose timeout', timeoutFailureInfo: { timeoutType: 'TIMEOUT_TYPE_START_TO_CLOSE' } },
        retryState: 'RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED',
      },
      durationMs,
    );
  }
}

export interface DeliveryHistoryOptions {
  readonly workflowId: string;
  readonly input: DeliverWebhookInput;
  /** The send results in order; at most 4. */
  readonly sends: readonly SendResult[];
  /** Every record activity fails non-retryably (PostgreSQL rejects the rows); the workflow must still finish. */
  readonly recordsRejected?: boolean;
  /**
   * Where a cut-short history ends: 'waiting' right after the last listed send failed and its retry timer
   * started; 'sending' right after the timer fired and the next send was scheduled.
   */
  readonly cut?: 'waiting' | 'sending';
}

/** The identity search attributes the workflow upserts first. */
export function identityAttributes(input: DeliverWebhookInput, companyId?: string): Record<string, string> {
  return {
    WebhookEventType: input.event.event_type,
    WebhookAction: input.event.action,
    ...(companyId ? { CompanyId: companyId } : {}),
  };
}

/** A history of deliverWebhook as a worker would have written it, for the given send results. */
export function buildDeliveryHistory(options: DeliveryHistoryOptions, companyId?: string): { events: Json[] } {
  const { input, sends } = options;
  const h = new HistoryBuilder();
  h.add('WORKFLOW_EXECUTION_STARTED', {
    workflowType: { name: 'deliverWebhook' },
    taskQueue: { name: TASK_QUEUE },
    input: { payloads: [jsonPayload(input)] },
    workflowTaskTimeout: '10s',
    originalExecutionRunId: 'fixture-run-id',
    firstExecutionRunId: 'fixture-run-id',
    attempt: 1,
    identity: 'fixture',
  });
  const finishRecord = (scheduled: string) => (options.recordsRejected ? h.rejectActivity(scheduled) : h.completeActivity(scheduled, undefined));
  let completed = h.workflowTask();
  h.upsertStatus(completed, 'sending', identityAttributes(input, companyId));
  let activitySeq = 1;
  let send = h.scheduleActivity(completed, activitySeq++, 'sendWebhook', { webhookId: input.webhookId, attempt: 1, event: input.event, timeoutMs: input.sendTimeoutMs ?? 30_000 });
  const records: string[] = [];

  for (let i = 0; i < sends.length; i++) {
    const attempt = i + 1;
    const result = sends[i];
    if (result === 'worker-lost') h.timeOutActivity(send, (input.sendTimeoutMs ?? 30_000) + 15_000);
    else h.completeActivity(send, result, result.durationMs);
    completed = h.workflowTask();
    records.push(h.scheduleActivity(completed, activitySeq++, 'recordAttempt'));
    const succeeded = result !== 'worker-lost' && result.succeeded;
    if (succeeded || attempt === MAX_ATTEMPTS) {
      h.upsertStatus(completed, succeeded ? 'delivered' : 'failed');
      break;
    }
    h.upsertStatus(completed, 'waiting');
    const delay = RETRY_DELAYS_MS[i];
    const timer = h.add('TIMER_STARTED', { timerId: String(attempt), startToFireTimeout: `${delay / 1000}s`, workflowTaskCompletedEventId: completed });
    finishRecord(records[records.length - 1]);
    h.workflowTask();
    if (i === sends.length - 1 && options.cut === 'waiting') return { events: h.events };
    h.add('TIMER_FIRED', { timerId: String(attempt), startedEventId: timer }, delay);
    completed = h.workflowTask();
    h.upsertStatus(completed, 'sending');
    send = h.scheduleActivity(completed, activitySeq++, 'sendWebhook', { webhookId: input.webhookId, attempt: attempt + 1, event: input.event, timeoutMs: input.sendTimeoutMs ?? 30_000 });
    if (i === sends.length - 1 && options.cut === 'sending') return { events: h.events };
  }

  finishRecord(records[records.length - 1]);
  completed = h.workflowTask();
  const outcome = h.scheduleActivity(completed, activitySeq++, 'recordOutcome');
  finishRecord(outcome);
  completed = h.workflowTask();
  h.add('WORKFLOW_EXECUTION_COMPLETED', { workflowTaskCompletedEventId: completed });
  return { events: h.events };
}
