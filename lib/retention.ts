// The retention model the workflow, its activities, its schedule and the CLI share: the policy in days, the
// run as it is passed on, and the run's summary. No workflow code, so the worker and the CLI import it freely.
import type { Config } from './config';
import type { RetentionTrigger } from './vocabulary';

/**
 * How long a finished webhook keeps its body, and its row (docs/personal-data.md, "Retention"), and an audit row its
 * place.
 */
export interface RetentionPolicy {
  readonly payloadDays: number;
  readonly logDays: number;
  readonly auditDays: number;
}

export const retentionPolicy = (
  config: Pick<Config, 'WEBHOOK_PAYLOAD_RETENTION_DAYS' | 'WEBHOOK_LOG_RETENTION_DAYS' | 'AUDIT_RETENTION_DAYS'>,
): RetentionPolicy => ({
  payloadDays: config.WEBHOOK_PAYLOAD_RETENTION_DAYS,
  logDays: config.WEBHOOK_LOG_RETENTION_DAYS,
  auditDays: config.AUDIT_RETENTION_DAYS,
});

/** The workflow type the schedule starts (workflows/personal-data/retention.ts exports a function of this name). */
export const RETENTION_WORKFLOW_TYPE = 'webhookRetention';

/** One schedule per task queue: every worker of that queue creates or updates the same one. */
export const retentionScheduleId = (taskQueue: string): string => `webhook-retention-${taskQueue}`;

/** How often the schedule starts a retention run: a body outlives its retention by at most this, plus the run. */
export const RETENTION_INTERVAL = '1 hour';

/** A started run as the activities pass it on: its retention_runs id and its cutoffs (ISO 8601). */
export interface RetentionRunRef {
  readonly runId: string;
  readonly payloadCutoff: string;
  readonly logCutoff: string;
}

/** How a run paces itself; the defaults are the workflow's (workflows/personal-data/retention.ts). */
export interface RetentionLimits {
  /** Rows per statement. */
  readonly batchSize?: number;
  /** How long one purge activity runs batches before it hands back. */
  readonly budgetMs?: number;
  /** Purge activities per workflow run before it continues as new. */
  readonly callsPerRun?: number;
}

/** The workflow's input: a continued run carries the run it goes on with, so its cutoffs do not move. */
export interface RetentionInput {
  readonly trigger: RetentionTrigger;
  readonly run?: RetentionRunRef;
  readonly limits?: RetentionLimits;
}

/** The workflow's result, and what `partner-service retention run` prints. */
export interface RetentionSummary extends RetentionRunRef {
  readonly trigger: RetentionTrigger;
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly bodiesRemoved: number;
  readonly rowsDeleted: number;
}
