import { ApplicationFailure } from '@temporalio/common';
import { describeError } from '../../lib/describe-error';

// The failures an activity throws on purpose, shared by the delivery's stages (activities/webhooks/delivery.ts),
// the partner gate's claim (activities/partner/gate-steps.ts) and ordering's turn
// (activities/ordering/ordering-steps.ts).

/**
 * Retry delay of an attempt a draining worker gave back. Longer than the local activities' retry threshold
 * (1 minute by default), so the workflow waits on a durable timer rather than retrying in this worker, and the
 * workflow task completes before the worker exits; any worker then claims and POSTs the attempt.
 */
export const DRAIN_RETRY_DELAY_MS = 65_000;

/** Nothing was claimed or POSTed: the attempt is retried after DRAIN_RETRY_DELAY_MS, by whichever worker polls. */
export function drainingFailure(): ApplicationFailure {
  return ApplicationFailure.create({
    type: 'WorkerDraining',
    message: 'the worker is shutting down: the attempt was not started and is retried later',
    nextRetryDelay: DRAIN_RETRY_DELAY_MS,
  });
}

/** SQLSTATE classes that no retry can fix: data exceptions, integrity violations, program limits. */
const REJECTED_DATA = /^(22|23|54)/;

/**
 * An outage is retried (Temporal's retry policy); a row PostgreSQL rejects for what it contains would be
 * rejected forever, so it fails the activity once, non-retryably, and the workflow goes on without it.
 */
export async function failPermanentlyOnRejectedData<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string' && REJECTED_DATA.test(code)) {
      // The message goes into the workflow's history and its log line: describeError leaves the refused value out.
      throw ApplicationFailure.nonRetryable(
        `PostgreSQL rejected the record (SQLSTATE ${code}): ${describeError(error)}`,
        'RecordRejected',
      );
    }
    throw error;
  }
}
