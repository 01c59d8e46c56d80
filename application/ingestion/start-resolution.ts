import { setTimeout as delay } from 'node:timers/promises';
import type { Knex } from 'knex';
import type { Logger } from '../../lib/logger';
import { inParallel } from '../../lib/in-parallel';
import { webhookStartResolutions } from '../../lib/metrics';
import { takeStartsInDoubt, type StartInDoubt } from '../../store/ingestion/starts-in-doubt';
import { forgetUnstartedWebhook, recordRun } from '../../store/ingestion/webhook-ingestion';
import type { TemporalGateway } from '../../temporal/gateway';

/** Rows one worker takes per look; it takes more at once while a batch comes back full. */
const START_RESOLUTION_BATCH = 100;
/** Lookups in flight at once: a backlog after a long stall drains in seconds without a burst on Temporal. */
const LOOKUP_CONCURRENCY = 8;

export interface StartResolutionDependencies {
  readonly knex: Knex;
  readonly logger: Logger;
  /** WEBHOOK_START_DOUBT_SECONDS: how long a row may go without a run before it is looked up. */
  readonly doubtSeconds: number;
  readonly gateway: Pick<TemporalGateway, 'runOf'>;
}

/**
 * What one look did: `recorded` (Temporal had the run: the row records it), `removed` (it had none: the row
 * went), `overtaken` (a run was recorded meanwhile, by the worker's claim or a retry), `unresolved` (Temporal did
 * not answer: looked up again after another doubt window).
 */
export type StartResolution = 'recorded' | 'removed' | 'overtaken' | 'unresolved';

export type StartResolutionSweep = Record<StartResolution, number>;

/**
 * Resolves every start in doubt that is due, by its deterministic workflow id: a run Temporal has is recorded
 * (the delivery goes on as any other); a row Temporal has no run for is removed, so `pending` never stands for
 * a delivery that will not happen. A caller's retry with the same event_id then answers 200 or 202 as ever.
 */
export async function resolveStartsInDoubt(deps: StartResolutionDependencies): Promise<StartResolutionSweep> {
  const counts: StartResolutionSweep = { recorded: 0, removed: 0, overtaken: 0, unresolved: 0 };
  for (;;) {
    const batch = await takeStartsInDoubt(deps.knex, deps.doubtSeconds, START_RESOLUTION_BATCH);
    await inParallel(batch.length, LOOKUP_CONCURRENCY, async (i) => {
      counts[await resolveOne(deps, batch[i])]++;
    });
    if (batch.length < START_RESOLUTION_BATCH) return counts;
  }
}

async function resolveOne(
  { knex, gateway, logger }: StartResolutionDependencies,
  start: StartInDoubt,
): Promise<StartResolution> {
  let runId: string | undefined;
  try {
    runId = await gateway.runOf(start.workflowId);
  } catch (error) {
    logger.debug(
      { err: error, workflowId: start.workflowId },
      'looking up a start in doubt failed; it is looked up again later',
    );
    return 'unresolved';
  }
  if (runId) {
    await recordRun(knex, start.webhookId, runId);
    webhookStartResolutions.inc({ outcome: 'recorded' });
    logger.info(
      { webhookId: start.webhookId, workflowId: start.workflowId, runId },
      'a start in doubt had started: its run is recorded',
    );
    return 'recorded';
  }
  // Guarded like any forget: a run recorded meanwhile (the worker's claim, a retry) keeps the row.
  if (!(await forgetUnstartedWebhook(knex, start.webhookId))) return 'overtaken';
  webhookStartResolutions.inc({ outcome: 'removed' });
  logger.info(
    { webhookId: start.webhookId, workflowId: start.workflowId },
    'a start in doubt had not started: its row is removed',
  );
  return 'removed';
}

/** How often a worker looks: often enough that a row is resolved within about 1.25 doubt windows. */
const sweepIntervalMs = (doubtSeconds: number): number => Math.min(15, doubtSeconds / 4) * 1000;

/** The loop every worker runs while it polls; PostgreSQL or Temporal trouble is logged once and tried again. */
export async function runStartResolution(deps: StartResolutionDependencies, stop: AbortSignal): Promise<void> {
  let lastFailure = '';
  while (!stop.aborted) {
    try {
      const sweep = await resolveStartsInDoubt(deps);
      if (sweep.unresolved)
        deps.logger.warn(sweep, 'some starts in doubt could not be resolved yet; they are looked up again');
      lastFailure = '';
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (message !== lastFailure)
        deps.logger.warn({ err: error }, 'could not look for starts in doubt; the worker tries again');
      lastFailure = message;
    }
    await delay(sweepIntervalMs(deps.doubtSeconds), undefined, { signal: stop }).catch(() => undefined);
  }
}
