import type { Knex } from 'knex';
import { status as GrpcStatus } from '@grpc/grpc-js';
import type { WorkflowService } from '@temporalio/client';
import type { Config } from '../lib/config';
import { dataAtRest, StoredTextDecryptionError, type DataAtRest } from '../lib/at-rest';
import type { WebhookEnvelope } from '../events/envelope';
import { openBody } from '../store/webhook-rows';
import { eventSubjectKeys } from '../lib/subject-index';
import { grpcCodeOf } from '../temporal/grpc-refusal';
import {
  completeErasure,
  countDeletedRuns,
  eraseSubjectWebhooks,
  erasureRuns,
  markErasureRun,
  unindexedRows,
  writeSubjectKeys,
  type ErasedCounts,
  type ErasureRun,
  type UnindexedRow,
} from '../store/erasure-steps';

export interface ErasureActivityDependencies {
  readonly config: () => Config;
  readonly knex: Knex;
  /** The worker's own connection to Temporal: deletes and describes the runs an erasure names. */
  readonly workflowService: WorkflowService;
}

/** Rows one index batch reads and writes. */
export const INDEX_BATCH = 500;
/** How long one call of the index goes on before it hands back to the workflow (which continues as new when its history grows). */
const INDEX_CALL_BUDGET_MS = 20_000;
/** Runs one call deletes or checks, so each call stays short and its progress is on record. */
const RUNS_PER_CALL = 200;

/** False when Temporal answers that it does not know the run (NOT_FOUND); true when the call succeeds. */
const runKnown = (call: Promise<unknown>): Promise<boolean> =>
  call.then(
    () => true,
    (error: unknown) => {
      if (grpcCodeOf(error) === GrpcStatus.NOT_FOUND) return false;
      throw error;
    },
  );

/**
 * The erasure workflow's activities (workflows/erase-subject.ts), on the records queue beside the other
 * PostgreSQL writes. Their names are part of every erasure's history. Each one is idempotent.
 */
export function createErasureActivities({ config, knex, workflowService }: ErasureActivityDependencies) {
  const namespace = () => config().temporal.namespace;
  return {
    /**
     * Gives rows written before the subject index their keys, from their body, in bounded batches from id `after`
     * on. Returns where the next call goes on, or null when every such row has been read.
     */
    async indexUnindexedWebhooks(after: string | null): Promise<string | null> {
      const atRest = dataAtRest(config());
      const stopAt = Date.now() + INDEX_CALL_BUDGET_MS;
      for (let cursor = after; ; ) {
        const rows = await unindexedRows(knex, cursor, INDEX_BATCH);
        const indexed = rows.flatMap((row) => {
          const event = openedBody(atRest, row);
          return event ? [{ id: row.id, keys: eventSubjectKeys(atRest.subjectSecret, event) }] : [];
        });
        await writeSubjectKeys(knex, indexed);
        if (rows.length < INDEX_BATCH) return null;
        cursor = rows[rows.length - 1].id;
        if (Date.now() > stopAt) return cursor;
      }
    },

    /** The one transaction that cancels, removes and records (store/erasure-steps.ts). */
    async eraseSubjectWebhooks(erasureId: string): Promise<ErasedCounts> {
      return eraseSubjectWebhooks(knex, erasureId);
    },

    /**
     * Deletes the erasure's runs from Temporal (history included; a running one is terminated first), up to
     * RUNS_PER_CALL: those not yet deleted, or with `again` those not yet gone. A run Temporal does not know
     * counts as deleted. Returns the count deleted so far and whether runs are left for another call.
     */
    async deleteErasureRuns(erasureId: string, again = false): Promise<{ runsDeleted: number; more: boolean }> {
      const runs = await erasureRuns(knex, erasureId, again ? 'notGone' : 'undeleted');
      for (const run of runs.slice(0, RUNS_PER_CALL)) {
        const known = await runKnown(workflowService.deleteWorkflowExecution({ namespace: namespace(), workflowExecution: execution(run) }));
        await markErasureRun(knex, erasureId, run, known ? 'deleted' : 'gone');
      }
      return { runsDeleted: await countDeletedRuns(knex, erasureId), more: runs.length > RUNS_PER_CALL };
    },

    /** Asks Temporal for each run not yet gone (deletion is asynchronous); marks those it no longer knows. Returns the count left. */
    async checkErasureRunsGone(erasureId: string): Promise<number> {
      const runs = await erasureRuns(knex, erasureId, 'notGone');
      let left = runs.length;
      for (const run of runs.slice(0, RUNS_PER_CALL)) {
        if (!(await runKnown(workflowService.describeWorkflowExecution({ namespace: namespace(), execution: execution(run) })))) {
          await markErasureRun(knex, erasureId, run, 'gone');
          left--;
        }
      }
      return left;
    },

    async completeErasure(erasureId: string): Promise<void> {
      await completeErasure(knex, erasureId);
    },
  };
}

/**
 * A row's body, or undefined when no listed key opens it (the worker's start counts such rows): the row stays
 * unindexed, and the keyset goes past it.
 */
function openedBody(atRest: DataAtRest, row: UnindexedRow): WebhookEnvelope | undefined {
  try {
    return openBody(atRest, row.id, row) ?? undefined;
  } catch (error) {
    if (error instanceof StoredTextDecryptionError) return undefined;
    throw error;
  }
}

/** A run as Temporal names it: without a run id, the workflow id's latest run. */
const execution = (run: ErasureRun) => ({ workflowId: run.workflowId, ...(run.runId && { runId: run.runId }) });

export type ErasureActivities = ReturnType<typeof createErasureActivities>;
