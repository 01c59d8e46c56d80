import type { Knex } from 'knex';
import { auditedCall, type OperatorContext } from '../access/audit';
import type { Config } from '../../lib/config';
import { countPurged } from '../../lib/metrics';
import { RETENTION_INTERVAL, retentionPolicy, retentionScheduleId } from '../../lib/retention';
import { oldestStoredBody, retentionCutoffs } from '../../store/personal-data/retention-purge';
import { namespaceRetentionSeconds } from '../../store/personal-data/temporal-namespaces';
import {
  finishRetentionRun,
  insertRetentionRun,
  latestRetentionRun,
  purgeForRun,
  type RetentionRun,
} from '../../store/personal-data/retention-runs';

// The retention purge as an operator sees it (`partner-service retention status|run`), and the oldest stored
// body the worker's gauge reads. The scheduled runs are Temporal's (workflows/personal-data/retention.ts).

/** A run's record in the CLI's snake_case JSON. */
export interface RetentionRunJson {
  readonly run_id: string;
  readonly trigger: RetentionRun['trigger'];
  readonly started_at: Date;
  readonly finished_at: Date | null;
  readonly payload_cutoff: Date;
  readonly log_cutoff: Date;
  readonly bodies_removed: number;
  readonly rows_deleted: number;
}

const runJson = (run: RetentionRun): RetentionRunJson => ({
  run_id: run.id,
  trigger: run.trigger,
  started_at: run.startedAt,
  finished_at: run.finishedAt,
  payload_cutoff: run.payloadCutoff,
  log_cutoff: run.logCutoff,
  bodies_removed: run.bodiesRemoved,
  rows_deleted: run.rowsDeleted,
});

export interface RetentionStatus {
  readonly payload_retention_days: number;
  readonly log_retention_days: number;
  readonly schedule: { readonly id: string; readonly every: string };
  /** The oldest body still stored of a finished webhook: when it finished and how long ago, or null. */
  readonly oldest_stored_body: { readonly finished_at: Date; readonly age_seconds: number } | null;
  /** The latest run on this task queue, scheduled or manual; null before the first. */
  readonly last_run: RetentionRunJson | null;
}

export async function retentionStatus(
  knex: Knex,
  config: Config,
  now: () => Date = () => new Date(),
): Promise<RetentionStatus> {
  const [oldest, last] = await Promise.all([
    oldestStoredBody(knex),
    latestRetentionRun(knex, config.TEMPORAL_TASK_QUEUE),
  ]);
  return {
    payload_retention_days: config.WEBHOOK_PAYLOAD_RETENTION_DAYS,
    log_retention_days: config.WEBHOOK_LOG_RETENTION_DAYS,
    schedule: { id: retentionScheduleId(config.TEMPORAL_TASK_QUEUE), every: RETENTION_INTERVAL },
    oldest_stored_body: oldest && {
      finished_at: oldest,
      age_seconds: Math.floor((now().getTime() - oldest.getTime()) / 1000),
    },
    last_run: last ? runJson(last) : null,
  };
}

/**
 * One retention run now, in this process and to the end: what the scheduled workflow does, recorded as
 * `manual`, and audited as `retention.run` (an intent before, its outcome after: it is many transactions).
 * Safe beside a scheduled run: both skip the rows the other holds.
 */
export async function runRetentionNow(
  knex: Knex,
  config: Config,
  who: OperatorContext,
  now: () => Date = () => new Date(),
): Promise<RetentionRunJson> {
  const policy = retentionPolicy(config);
  const what = {
    action: 'retention.run',
    target: config.TEMPORAL_TASK_QUEUE,
    parameters: { payload_days: policy.payloadDays, log_days: policy.logDays, audit_days: policy.auditDays },
  } as const;
  return auditedCall(knex, who, what, async () => {
    const startedAt = now();
    const cutoffs = retentionCutoffs(
      startedAt,
      policy,
      await namespaceRetentionSeconds(knex, config.temporal.namespace),
    );
    const run = await insertRetentionRun(knex, {
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      trigger: 'manual',
      startedAt,
      ...cutoffs,
    });
    await purgeForRun(knex, { ...run, auditCutoff: cutoffs.auditCutoff }, startedAt, {
      afterBatch: countPurged,
      auditActor: who.actor,
    });
    return runJson(await finishRetentionRun(knex, run.id, now()));
  });
}
