import type { Knex } from 'knex';
import type { WorkflowService } from '@temporalio/client';
import { dataAtRest } from '../../lib/at-rest';
import type { Config } from '../../lib/config';
import {
  MAX_ATTEMPTS,
  type AttemptOutcome,
  type DeliverAttemptInput,
  type DeliveredAttempt,
  type FinalStatus,
  type QueuedAttempt,
  type StoppedStatus,
} from '../../lib/delivery';
import type { Logger } from '../../lib/logger';
import { orderingGaps, orderingWakes } from '../../lib/metrics';
import { blockPlace, settlePlace, takeTurn, unblockPlace } from '../../store/ordering/lanes';
import { wakeInOrder } from '../../temporal/ordering-wake';
import { failPermanentlyOnRejectedData } from '../webhooks/attempt-failures';

// Ordering's part of an attempt (activities/webhooks/delivery.ts): an ordered webhook's turn in its key's lane
// before the claim, and the settling of its place (or the block of its key) once its delivery ended. The lane's
// statements are in store/ordering/lanes.ts; the wake of the next webhook is temporal/ordering-wake.ts.

/** An ordered webhook's place in its key's lane: its key and sequence; undefined when it is sent unordered. */
export type Place = DeliverAttemptInput['ordering'];

/** The turn an attempt was given: queued behind an earlier webhook of its key, or its place (if any) to go with. */
export type Turn = QueuedAttempt | { readonly place: Place };

/** What one attempt ended: its delivery's final status, if any, and whether its key is now blocked. */
export interface AttemptEnd {
  readonly status?: FinalStatus;
  readonly blocks: boolean;
}

export interface OrderingStepsDependencies {
  readonly config: () => Config;
  readonly knex: Knex;
  readonly logger: Logger;
  /** The worker's connection to Temporal, through which a settled place wakes the next webhook of its key. */
  readonly workflowService?: WorkflowService;
}

/** The attempt's steps in its key's lane, bound to their dependencies. */
export function createOrderingSteps({ config, knex, logger, workflowService }: OrderingStepsDependencies) {
  /**
   * Settles an ordered webhook's place in its lane (a final failure or a cancel leaves a gap) and wakes the next
   * webhook of its key. A wake that cannot be sent is logged: the ordering sweep finds that webhook waiting and
   * wakes it.
   */
  async function settleInOrder(webhookId: string, status: StoppedStatus): Promise<void> {
    // Anything but a delivery leaves its number missing at the partner: a gap.
    const gap = status !== 'delivered';
    const { gapRecorded, next } = await settlePlace(knex, webhookId, gap);
    if (gapRecorded) orderingGaps.inc();
    if (!next || !workflowService) return;
    await wakeInOrder(workflowService, config().temporal.namespace, next.workflowId, 'partner-service-worker').then(
      (woken) => woken && orderingWakes.inc({ source: 'settle' }),
      (error: unknown) => {
        logger.warn(
          { err: error, webhookId, next: next.webhookId },
          'the next webhook of the ordering key could not be woken; the ordering sweep wakes it',
        );
      },
    );
  }

  return {
    /**
     * An ordered webhook's first attempt asks its lane first: queued while an earlier webhook of its key is
     * unsettled, so only a lane's head takes a send slot or is held by the partner gate. An operator's retry of
     * a blocked head is not blocked while it goes, and blocked again if it fails.
     */
    async turn(input: DeliverAttemptInput): Promise<Turn> {
      let place = input.ordering;
      // A recovery's redelivery waits in its own place, and sends its original's key and number.
      const laneKey =
        place === undefined ? input.orderingKey : input.inLane && input.attempt === 1 ? place.key : undefined;
      if (laneKey !== undefined) {
        const turn = await failPermanentlyOnRejectedData(() =>
          takeTurn(
            knex,
            dataAtRest(config()),
            { ...input.webhook, event: input.event, redeliveryOf: input.webhookIdHeader },
            laneKey,
          ),
        );
        if (turn.kind === 'queued') return { queued: { sequence: turn.sequence, behind: turn.behind } };
        if (turn.kind === 'turn' && !input.inLane) place = { key: turn.key, sequence: turn.sequence };
      }
      if (place && input.attempt > MAX_ATTEMPTS) await unblockPlace(knex, input.webhookId);
      return { place };
    },

    /**
     * What an attempt's outcome ends: the delivery (delivered, or failed on its last attempt) or nothing yet. An
     * ordered head's final failure with WEBHOOK_ORDERING_ON_FAILURE=block ends nothing either: its key waits.
     */
    endOf(input: DeliverAttemptInput, place: Place, outcome: AttemptOutcome): AttemptEnd {
      const blocks =
        !outcome.succeeded &&
        input.finalOnFailure &&
        place !== undefined &&
        !input.webhookIdHeader &&
        config().WEBHOOK_ORDERING_ON_FAILURE === 'block';
      const status: FinalStatus | undefined = outcome.succeeded
        ? 'delivered'
        : input.finalOnFailure && !blocks
          ? 'failed'
          : undefined;
      return { status, blocks };
    },

    /**
     * Settles an ordered webhook's place once its delivery ended, or blocks its key. A redelivery has no place of
     * its own, but for a recovery's (`inLane`).
     */
    async settleOrBlock(input: DeliverAttemptInput, place: Place, end: AttemptEnd): Promise<void> {
      if (end.blocks) await blockPlace(knex, input.webhookId);
      else if (end.status && place && (!input.webhookIdHeader || input.inLane))
        await settleInOrder(input.webhookId, end.status);
    },

    settleInOrder,
  };
}

export type OrderingSteps = ReturnType<typeof createOrderingSteps>;

/**
 * What an attempt that had its turn tells the workflow of its place: the sequence, and the lane's key when the
 * workflow's input brought another (a retried event_id), so its later attempts send the first acceptance's key.
 */
export function placeInResult(
  input: DeliverAttemptInput,
  place: Place,
): Pick<DeliveredAttempt, 'sequence' | 'laneKey'> {
  if (!place) return {};
  const laneKey = input.orderingKey !== undefined && place.key !== input.orderingKey ? place.key : undefined;
  return { sequence: place.sequence, ...(laneKey !== undefined && { laneKey }) };
}
