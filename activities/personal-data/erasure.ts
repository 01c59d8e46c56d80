import type { Knex } from 'knex';
import type { WorkflowService } from '@temporalio/client';
import type { Config } from '../../lib/config';
import { dataAtRest, type DataAtRest } from '../../lib/at-rest';
import type { WebhookEnvelope } from '../../events/envelope';
import { openBody } from '../../store/webhooks/webhook-rows';
import { eventSubjectKeys } from '../../lib/subject-index';
import { indexKeysOf } from '../../store/personal-data/subject-index-keys';
import { DELETION_PHASES_MS, deleteEveryRun } from '../../temporal/run-deletion';
import {
  completeErasure,
  eraseSubjectWebhooks,
  erasureWorkflows,
  forgetErasureLanes,
  markErasureWorkflow,
  notePendingReason,
  unindexedRows,
  writeSubjectKeys,
  type ErasedCounts,
  type UnindexedRow,
} from '../../store/personal-data/erasure-steps';
import { StoredTextDecryptionError } from '../../lib/errors';
import { erasedInFlightBoundMs } from '../../lib/delivery';
import { wakeInOrder } from '../../temporal/ordering-wake';

export interface ErasureActivityDependencies {
  readonly config: () => Config;
  readonly knex: Knex;
  /** The worker's own connection to Temporal: deletes and describes the runs an erasure names. */
  readonly workflowService: WorkflowService;
}

/** Where the erasure's Temporal step stands after a sweep: workflow ids still served, and starts not yet known. */
export interface ErasureSweep {
  readonly left: number;
  readonly unsettled: number;
  readonly runsDeleted: number;
}

/** Rows one index batch reads and writes. */
export const INDEX_BATCH = 500;
/**
 * How long one call of the index goes on before it hands back to the workflow (which continues as new when its history
 * grows).
 */
const INDEX_CALL_BUDGET_MS = 20_000;
/** Workflow ids one sweep asks Temporal about, so each call stays short and its progress is on record. */
const WORKFLOWS_PER_SWEEP = 200;
/** The longest failure text the record keeps of a step that is retried. */
const REASON_CHARS = 300;

/**
 * The erasure workflow's activities (workflows/personal-data/erase-subject.ts), on the records queue beside the other
 * PostgreSQL writes. Their names are part of every erasure's history. Each one is idempotent.
 */
export function createErasureActivities({ config, knex, workflowService }: ErasureActivityDependencies) {
  const namespace = () => config().temporal.namespace;

  /** The erasure's lanes forgotten once their erased heads are over; the next webhooks woken; the lanes still held. */
  async function forgetLanes(erasureId: string): Promise<number> {
    const { next, held } = await forgetErasureLanes(
      knex,
      erasureId,
      erasedInFlightBoundMs(config().PARTNER_TIMEOUT_MS),
    );
    // A wake that fails is sent again by the ordering sweep, which finds that webhook queued with nothing ahead.
    for (const { workflowId } of next)
      await wakeInOrder(workflowService, namespace(), workflowId, 'partner-service-worker').catch(() => false);
    return held;
  }
  return {
    /**
     * Gives rows written before the subject index their keys, from their body, in bounded batches from id `after`
     * on. Returns where the next call goes on, or null when every such row has been read.
     */
    async indexUnindexedWebhooks(after: string | null): Promise<string | null> {
      const atRest = dataAtRest(config());
      const { writeWith } = await indexKeysOf(knex, atRest);
      const stopAt = Date.now() + INDEX_CALL_BUDGET_MS;
      for (let cursor = after; ;) {
        const rows = await unindexedRows(knex, cursor, INDEX_BATCH);
        const indexed = rows.flatMap((row) => {
          const event = openedBody(atRest, row);
          return event ? [{ id: row.id, keys: eventSubjectKeys(writeWith.key, event) }] : [];
        });
        await writeSubjectKeys(knex, indexed, writeWith.id);
        if (rows.length < INDEX_BATCH) return null;
        cursor = rows[rows.length - 1].id;
        if (Date.now() > stopAt) return cursor;
      }
    },

    /**
     * The one transaction that cancels, removes and records (store/personal-data/erasure-steps.ts). A failure is
     * retried, and said on the record meanwhile (PostgreSQL's message, which quotes no value), so a stuck
     * erasure shows why.
     */
    async eraseSubjectWebhooks(erasureId: string): Promise<ErasedCounts> {
      try {
        return await eraseSubjectWebhooks(knex, erasureId);
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        await notePendingReason(
          knex,
          erasureId,
          `the erasing step failed and is retried: ${message.slice(0, REASON_CHARS)}`,
        ).catch(() => undefined);
        throw error;
      }
    },

    /**
     * One sweep of the erasure's workflow ids: every run Temporal still serves of a settled one is deleted (again,
     * while its deletion is under way). One that no describe, list or history read by workflow id returns a run of
     * is quiet; quiet again at a look DELETION_PHASES_MS or more later, it is marked gone (a run seen at that look
     * is deleted and the pause starts over). Between the two looks it costs no call to Temporal: the workflow's
     * durable timers wait, no activity sleeps. An unsettled one (a start in flight or in doubt) waits: a run may
     * still appear for it. The record says why the erasure is still pending.
     */
    async sweepErasureRuns(erasureId: string): Promise<ErasureSweep> {
      const pauseMs = DELETION_PHASES_MS;
      const { workflows, left, resting } = await erasureWorkflows(knex, erasureId, WORKFLOWS_PER_SWEEP, pauseMs);
      const looked = { served: 0, unsettled: 0, quiet: 0, gone: 0 };
      for (const { workflowId, settled, confirming } of workflows) {
        const runs = await deleteEveryRun(workflowService, namespace(), workflowId);
        const mark = !settled || runs > 0 ? 'deleted' : confirming ? 'gone' : 'quiet';
        await markErasureWorkflow(knex, erasureId, workflowId, mark, pauseMs);
        if (mark === 'deleted') looked[settled ? 'served' : 'unsettled']++;
        else looked[mark]++;
      }
      const { served, unsettled, quiet, gone } = looked;
      const runsLeft = left - gone;
      // Once no run is left, the subject's lanes: `completed` is said only when none of them holds the key.
      const lanesHeld = runsLeft === 0 ? await forgetLanes(erasureId) : 0;
      const stillLeft = runsLeft + lanesHeld;
      const reason = lanesHeld
        ? `waiting: ${lanesHeld} ordering lanes of the subject wait for an attempt in flight to end ` +
          'before their key is removed'
        : pendingReason({ left: stillLeft, served, unsettled, quiet: quiet + resting });
      const runsDeleted = await notePendingReason(knex, erasureId, reason);
      return { left: stillLeft, unsettled, runsDeleted };
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

/** Where a sweep left the erasure's workflow ids still open: counts of each kind. */
interface SweepCounts {
  readonly left: number;
  /** Temporal still served a run of them (deleted again). */
  readonly served: number;
  /** Their webhook's start is not settled. */
  readonly unsettled: number;
  /** Temporal served no run of them at one look; they wait for the second. */
  readonly quiet: number;
}

/** Why an erasure is still pending after a sweep, in words for `erase status`; null when nothing holds it. */
function pendingReason({ left, served, unsettled, quiet }: SweepCounts): string | null {
  if (left === 0) return null;
  const seconds = DELETION_PHASES_MS / 1000;
  const parts = [
    served && `Temporal still serves runs of ${served} of its workflow ids (deleted; Temporal deletes asynchronously)`,
    unsettled &&
      `${unsettled} webhook starts are not settled yet (in flight, or in doubt until the worker resolves them)`,
    quiet &&
      `${quiet} workflow ids show no run and are looked at again ${seconds} s after (Temporal deletes in phases)`,
    left > served + unsettled + quiet && `${left - served - unsettled - quiet} workflow ids are not checked yet`,
  ].filter(Boolean);
  return `waiting: ${parts.join('; ')}`;
}

export type ErasureActivities = ReturnType<typeof createErasureActivities>;
