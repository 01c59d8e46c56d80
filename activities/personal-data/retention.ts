import { Context } from '@temporalio/activity';
import type { Knex } from 'knex';
import type { WorkflowService } from '@temporalio/client';
import { readNamespaceRetention } from '../../temporal/namespace-retention';
import { namespaceRetentionSeconds, recordNamespaceRetention } from '../../store/personal-data/temporal-namespaces';
import type { Config } from '../../lib/config';
import { countPurged } from '../../lib/metrics';
import { retentionPolicy, type RetentionRunRef, type RetentionSummary } from '../../lib/retention';
import type { RetentionTrigger } from '../../lib/vocabulary';
import { auditCutoff, retentionCutoffs, type PurgeProgress } from '../../store/personal-data/retention-purge';
import {
  finishRetentionRun,
  insertRetentionRun,
  purgeForRun,
  retentionSummary,
} from '../../store/personal-data/retention-runs';

export interface RetentionActivityDependencies {
  readonly config: () => Config;
  readonly knex: Knex;
  /** The clock the cutoffs and removal times are read from; tests pass their own. */
  readonly now?: () => Date;
  /** The worker's connection: each run reads the namespace's retention again, so rows outlive their runs. */
  readonly workflowService?: WorkflowService;
}

/** The retention workflow's activities. Their names are part of its histories. */
export function createRetentionActivities({
  config,
  knex,
  workflowService,
  now = () => new Date(),
}: RetentionActivityDependencies) {
  return {
    /**
     * Records a run with its cutoffs, fixed at its start (a continued run keeps them). A row stays while Temporal
     * may still hold its run: the namespace's retention is read again first (the last one recorded if Temporal
     * does not answer).
     */
    async startRetentionRun({ trigger }: { trigger: RetentionTrigger }): Promise<RetentionRunRef> {
      const startedAt = now();
      const current = config();
      const namespace = current.temporal.namespace;
      const read = workflowService && (await readNamespaceRetention(workflowService, namespace).catch(() => undefined));
      if (read !== undefined) await recordNamespaceRetention(knex, namespace, read);
      const cutoffs = retentionCutoffs(
        startedAt,
        retentionPolicy(current),
        await namespaceRetentionSeconds(knex, namespace),
      );
      const run = await insertRetentionRun(knex, {
        taskQueue: current.TEMPORAL_TASK_QUEUE,
        trigger,
        startedAt,
        ...cutoffs,
      });
      return { runId: run.id, payloadCutoff: run.payloadCutoff.toISOString(), logCutoff: run.logCutoff.toISOString() };
    },

    /** Bounded batches for at most `budgetMs`, a heartbeat after each; `done` when nothing due is left. */
    async purgeDueWebhooks({
      run,
      budgetMs,
      batchSize,
    }: {
      run: RetentionRunRef;
      budgetMs: number;
      batchSize?: number;
    }): Promise<PurgeProgress> {
      const context = Context.current();
      const startedAt = now();
      // The run's webhook cutoffs stay fixed; the audit rows' is read at each call (it is not in the run's record).
      const cutoffs = {
        id: run.runId,
        payloadCutoff: new Date(run.payloadCutoff),
        logCutoff: new Date(run.logCutoff),
        auditCutoff: auditCutoff(startedAt, retentionPolicy(config())),
      };
      return purgeForRun(knex, cutoffs, startedAt, {
        untilMs: performance.now() + budgetMs,
        ...(batchSize !== undefined && { batchSize }),
        afterBatch: (batch) => {
          countPurged(batch);
          context.heartbeat(batch);
        },
      });
    },

    async finishRetentionRun({ runId }: { runId: string }): Promise<RetentionSummary> {
      return retentionSummary(await finishRetentionRun(knex, runId, now()));
    },
  };
}

export type RetentionActivities = ReturnType<typeof createRetentionActivities>;
