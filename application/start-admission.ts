import { ingestStartsInFlight } from '../lib/metrics';

/**
 * This api process already has its bound of webhook starts in flight: the request was refused before anything
 * was stored, so retrying later (same event_id) is always safe.
 */
export class IngestionOverloadedError extends Error {
  /** The 503's `reason`, as TemporalUnavailableError's `code` is. */
  readonly code = 'overloaded';
  constructor(readonly limit: number) {
    super(`This api process already has ${limit} webhook starts in flight (INGEST_MAX_STARTS_IN_FLIGHT)`);
    this.name = 'IngestionOverloadedError';
  }
}

/** Admits a webhook start while fewer than `limit` are in flight in this process, else refuses it at once. */
export interface StartAdmission {
  /** Runs `start` holding one of the `limit` places; throws IngestionOverloadedError, without running it, when none is free. */
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
