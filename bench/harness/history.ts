import { temporal } from '@temporalio/proto';

const { EventType } = temporal.api.enums.v1;

/** What one workflow history costs in Temporal actions (as Temporal Cloud bills them) and events. */
export type ActionCounts = ReturnType<typeof countActions>;

/** Counts from the history alone, so the figures follow the workflow code as it changes. */
export function countActions(history: temporal.api.history.v1.IHistory) {
  const events = history.events ?? [];
  const count = (...types: temporal.api.enums.v1.EventType[]) =>
    events.filter((e) => types.includes(e.eventType ?? EventType.EVENT_TYPE_UNSPECIFIED)).length;
  const figures = {
    // The workflow's own start, and child workflows started.
    starts: count(
      EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
      EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED,
    ),
    activities: count(EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED),
    // Attempts of scheduled activities beyond their first: each is billed as an action.
    activityRetries: events.reduce(
      (sum, e) => sum + Math.max(0, (e.activityTaskStartedEventAttributes?.attempt ?? 1) - 1),
      0,
    ),
    // MarkerRecorded events of core's local activities.
    localActivities: events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity').length,
    timers: count(EventType.EVENT_TYPE_TIMER_STARTED),
    upserts: count(EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES),
    // Signals received or sent, and updates accepted.
    signalsAndUpdates: count(
      EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
      EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
      EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
    ),
  };
  return {
    events: events.length,
    workflowTasksCompleted: count(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED),
    ...figures,
    // Every figure above, added up.
    actions: Object.values(figures).reduce((sum, n) => sum + n, 0),
  };
}

/** The history of one delivery, with how many POSTs the partner got and how it ended. */
export interface DeliveryHistory {
  readonly posts: number;
  readonly status: string;
  readonly counts: ActionCounts;
}

/** The signals a history received, by name. */
export function signalsReceived(history: temporal.api.history.v1.IHistory): Map<string, number> {
  const names = new Map<string, number>();
  for (const event of history.events ?? []) {
    const name = event.workflowExecutionSignaledEventAttributes?.signalName;
    if (name) names.set(name, (names.get(name) ?? 0) + 1);
  }
  return names;
}
