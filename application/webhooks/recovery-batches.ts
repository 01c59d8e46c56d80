import type { Client } from '@temporalio/client';
import type { Knex } from 'knex';
import type { DataAtRest } from '../../lib/at-rest';
import { inParallel } from '../../lib/in-parallel';
import { resealedBody } from '../../store/ingestion/webhook-ingestion';
import { placesOf } from '../../store/ordering/lanes';
import {
  finishRecovery,
  recordBatchStarts,
  recoveryCursor,
  writeRecoveryBatch,
  type BatchItemRow,
  type BatchRedelivery,
} from '../../store/webhooks/recoveries';
import { asStoredWebhook } from '../../store/webhooks/webhook-rows';
import { startDeliveryWorkflow } from '../../temporal/delivery-start';
import type { EventAction, EventType } from '../../events/envelope';
import type { RecoveryBatchResult } from '../../workflows/types';
import { redeliveryIds } from '../ingestion/ids';
import { storedDelivery } from '../ingestion/start-webhook';

// One batch of a partner's recovery, the recovery workflow's only activity (workflows/webhooks/recover-webhooks.ts):
// its redelivery rows and lane places written by one statement, its delivery workflows started, its starts recorded
// by one more. Every step is idempotent, so a retried batch (a worker lost mid-batch) writes nothing twice and starts
// nothing twice: the rows are unique per original and recovery, and a start of a known workflow id finds its run.

export interface RecoveryBatchDependencies {
  readonly knex: Knex;
  readonly atRest: DataAtRest;
  /** A client on the worker's connection: the delivery workflows are started as ingestion starts them. */
  readonly client: Client;
  readonly taskQueue: string;
  readonly sendTimeoutMs: number;
  /** Redeliveries written per batch (one statement each way). */
  readonly batchSize?: number;
  /** Starts between two looks at a cancel request: the most a cancel lets through once asked. */
  readonly startGroup?: number;
  /** Workflow starts at once. */
  readonly concurrency?: number;
}

export const RECOVERY_BATCH_SIZE = 500;
const START_GROUP = 50;
const START_CONCURRENCY = 16;

/**
 * Runs the recovery's next batch, or ends the recovery: cancelled when asked (what its batch wrote and did not start
 * removed), completed once every item has started. A cancel asked mid-batch stops it at the next group of starts.
 */
export async function runRecoveryBatch(
  deps: RecoveryBatchDependencies,
  recoveryId: string,
): Promise<RecoveryBatchResult> {
  const { knex, batchSize = RECOVERY_BATCH_SIZE } = deps;
  const startGroup = Math.min(deps.startGroup ?? START_GROUP, batchSize);
  const cursor = await recoveryCursor(knex, recoveryId);
  if (!cursor) return { started: 0, ended: 'cancelled' };
  if (cursor.state !== 'running') return { started: 0, ended: cursor.state };
  if (cursor.cancelRequested) return end(knex, recoveryId, 'cancelled', 0);
  if (cursor.nextItem >= cursor.total) return end(knex, recoveryId, 'completed', 0);
  const to = Math.min(cursor.nextItem + batchSize, cursor.total);
  const written = await writeRecoveryBatch(knex, recoveryId, cursor.nextItem, to, (fresh) =>
    fresh.map((row) => newRedelivery(deps.atRest, row)),
  );
  // An original whose body an erasure removed meanwhile has no redelivery: nothing to start.
  const rows = written.filter((row) => row.redelivery_id !== null);
  const places = await placesOf(
    knex,
    deps.atRest,
    rows.map((row) => row.id),
  );
  const starts: { webhookId: string; runId: string }[] = [];
  for (let first = 0; first < rows.length; first += startGroup) {
    if (first > 0 && (await recoveryCursor(knex, recoveryId))?.cancelRequested) {
      await recordBatchStarts(knex, recoveryId, starts, rows[first].item);
      return end(knex, recoveryId, 'cancelled', starts.length);
    }
    const group = rows.slice(first, first + startGroup);
    await inParallel(group.length, deps.concurrency ?? START_CONCURRENCY, async (i) => {
      const row = group[i];
      starts.push({ webhookId: row.redelivery_id!, runId: await startOne(deps, row, places.get(row.id)) });
    });
  }
  await recordBatchStarts(knex, recoveryId, starts, to);
  return { started: starts.length };
}

async function end(
  knex: Knex,
  recoveryId: string,
  state: 'completed' | 'cancelled',
  started: number,
): Promise<RecoveryBatchResult> {
  await finishRecovery(knex, recoveryId, state);
  return { started, ended: state };
}

/** A fresh redelivery of a batch's original: its ids, and its body sealed again for its own row when sealed. */
function newRedelivery(atRest: DataAtRest, row: BatchItemRow): BatchRedelivery {
  const ids = redeliveryIds({
    event_type: row.event_type as EventType,
    action: row.action as EventAction,
    event_id: row.event_id,
  });
  const body = resealedBody(atRest, row.id, row, ids.webhookId);
  return {
    item: row.item,
    webhookId: ids.webhookId,
    workflowId: ids.workflowId,
    originalId: row.id,
    sealedHex: body.sealed?.toString('hex') ?? null,
    keyId: body.keyId,
  };
}

/**
 * Starts a redelivery's workflow (or finds its run): the original's event and number, and, when the original is
 * ordered, a turn in its own lane place.
 */
function startOne(
  deps: RecoveryBatchDependencies,
  row: BatchItemRow,
  ordering: { key: string; sequence: number } | undefined,
): Promise<string> {
  const original = asStoredWebhook(row, deps.atRest);
  const delivery = storedDelivery(
    { ...original, webhookId: row.redelivery_id!, workflowId: row.redelivery_workflow_id! },
    deps.sendTimeoutMs,
  );
  return startDeliveryWorkflow(
    deps.client,
    {
      ...delivery,
      input: { ...delivery.input, redeliveryOf: row.id, ...(ordering && { ordering, inLane: true as const }) },
    },
    deps.taskQueue,
  );
}
