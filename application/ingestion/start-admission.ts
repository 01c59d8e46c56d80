import { ingestStartsInFlight } from '../../lib/metrics';
import { IngestionOverloadedError } from '../../lib/errors';

/** Admits a webhook start while fewer than `limit` are in flight in this process, else refuses it at once. */
export interface StartAdmission {
  /**
   * Runs `start` holding one of the `limit` places; throws IngestionOverloadedError, without running it, when none is
   * free.
   */
  admit<T>(start: () => Promise<T>): Promise<T>;
}

/**
 * Refusing at once, rather than queueing, keeps every admitted start well inside Temporal's call deadline: a
 * start that waits behind too many others passes it and turns into one whose outcome is unknown.
 */
export function startAdmission(limit: number): StartAdmission {
  let inFlight = 0;
  return {
    async admit(start) {
      if (inFlight >= limit) throw new IngestionOverloadedError(limit);
      inFlight++;
      ingestStartsInFlight.inc();
      try {
        return await start();
      } finally {
        inFlight--;
        ingestStartsInFlight.dec();
      }
    },
  };
}
