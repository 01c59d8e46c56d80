// Timing read from a workflow history: event times are the server's (workflow) clock, so on the
// time-skipping server they include the skipped time, unlike any activity's Date.now().
import { temporal } from '@temporalio/proto';

type History = temporal.api.history.v1.IHistory;
type Timestamp = { seconds?: unknown; nanos?: number | null } | null | undefined;

const ms = (t: Timestamp): number => Number(t?.seconds ?? 0) * 1000 + (t?.nanos ?? 0) / 1e6;

const { EventType } = temporal.api.enums.v1;
/** The marker sdk-core records for each local activity (the attempts). */
const LOCAL_ACTIVITY_MARKER = 'core_local_activity';

/** One attempt (a local activity), on the server's clock: it runs between the start of its workflow task and its marker. */
export interface Send {
  readonly startedAt: number;
  readonly endedAt: number;
}

/** Every attempt of the history, in order, queued ones (no POST) included. */
export function sendsOf(history: History): Send[] {
  const sends: Send[] = [];
  let taskStartedAt = NaN;
  for (const event of history.events ?? []) {
    if (event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED) taskStartedAt = ms(event.eventTime);
    if (
      event.eventType === EventType.EVENT_TYPE_MARKER_RECORDED &&
      event.markerRecordedEventAttributes?.markerName === LOCAL_ACTIVITY_MARKER
    ) {
      sends.push({ startedAt: taskStartedAt, endedAt: ms(event.eventTime) });
    }
  }
  return sends;
}

/** The server-clock gaps from the end of each POST to the start of the next one, in ms. */
export function gapsBetweenSends(history: History): number[] {
  const sends = sendsOf(history);
  return sends.slice(1).map((send, i) => send.startedAt - sends[i].endedAt);
}

/** Each timer's commanded duration in ms, in order. */
export function timerDurations(history: History): number[] {
  return (history.events ?? [])
    .filter((event) => event.eventType === EventType.EVENT_TYPE_TIMER_STARTED)
    .map((event) => ms(event.timerStartedEventAttributes?.startToFireTimeout as Timestamp));
}
