// The one constructor of an attempt that got no HTTP answer. Imported by the workflow and by the activities,
// so it stays a pure function over types: nothing here may make the workflow bundle non-deterministic.
import type { AttemptErrorClass } from '../lib/vocabulary';
import type { AttemptOutcome } from './types';

export interface AttemptFailure {
  readonly errorClass: AttemptErrorClass;
  readonly errorMessage: string;
  /** ISO 8601; absent: now (the workflow's clock inside the workflow). */
  readonly startedAt?: string;
  /** Absent: 0, for an attempt that never sent anything. */
  readonly durationMs?: number;
}

export function failedAttempt(attempt: number, { errorClass, errorMessage, startedAt = new Date().toISOString(), durationMs = 0 }: AttemptFailure): AttemptOutcome {
  return { attempt, startedAt, durationMs, httpStatus: null, errorClass, errorMessage, responseBody: null, succeeded: false };
}
