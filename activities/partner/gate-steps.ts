import { setTimeout as delay } from 'node:timers/promises';
import type { Knex } from 'knex';
import { ApplicationFailure } from '@temporalio/common';
import { dataAtRest } from '../../lib/at-rest';
import type { Config } from '../../lib/config';
import type { AttemptOutcome, DeliverAttemptInput } from '../../lib/delivery';
import type { Logger } from '../../lib/logger';
import { partnerAnswer } from '../../lib/partner-states';
import { claimAttempt, type AttemptClaim } from '../../store/webhooks/attempt-claim';
import type { GateChange, GateClaim, GateFeedback } from '../../store/partner/partner-gate';
import { drainingFailure, failPermanentlyOnRejectedData } from '../webhooks/attempt-failures';

// The partner gate's part of an attempt (activities/webhooks/delivery.ts): the claim within the deployment's cap
// before the POST, and what the POST tells the breaker after it. The gate's statements are in
// store/partner/partner-gate.ts, its states in lib/partner-states.ts.

export interface GateStepsDependencies {
  readonly config: () => Config;
  readonly knex: Knex;
  readonly logger: Logger;
  /** Aborted when the worker begins its graceful shutdown: a claim not made yet is given back. */
  readonly draining?: AbortSignal;
}

/** The attempt's steps on the partner gate, bound to their dependencies. */
export function createGateSteps({ config, knex, logger, draining }: GateStepsDependencies) {
  return {
    /**
     * Claims the attempt within the deployment's cap: a send slot a little ahead is waited for here, then
     * claimed; with no slot within the horizon, the claim is asked again when one frees. Past
     * THROTTLED_CLAIM_BUDGET_MS the try gives up unclaimed and Temporal retries it.
     */
    async claimWithinCap(input: DeliverAttemptInput): Promise<AttemptClaim> {
      const { TEMPORAL_TASK_QUEUE: taskQueue, PARTNER_MAX_PER_SECOND: maxPerSecond } = config();
      const giveUpAt = performance.now() + THROTTLED_CLAIM_BUDGET_MS;
      let slotReserved = false;
      for (;;) {
        if (draining?.aborted) throw drainingFailure();
        const gate: GateClaim = { taskQueue, maxPerSecond, bypassHold: input.pastHoldCeiling === true, slotReserved };
        const claim = await failPermanentlyOnRejectedData(() =>
          claimAttempt(
            knex,
            dataAtRest(config()),
            { ...input.webhook, event: input.event, redeliveryOf: input.webhookIdHeader },
            input.attempt,
            gate,
          ),
        );
        if (claim.kind !== 'slot' && claim.kind !== 'throttled') return claim;
        const waitMs = Math.max(MIN_CLAIM_WAIT_MS, claim.kind === 'slot' ? claim.sendInMs : claim.retryInMs);
        if (performance.now() + waitMs > giveUpAt) throw throttledFailure();
        const wakeAt = performance.now() + waitMs;
        await delay(waitMs);
        // A slot woken up late (a stalled event loop) has passed: POSTing in it would bunch with the slots after
        // it, so it is left unused and the next claim takes a new one.
        slotReserved = claim.kind === 'slot' && performance.now() - wakeAt <= LATE_SLOT_MS;
      }
    },

    /** The breaker's input from a POST that was made, fed by the attempt's record. */
    gateFeedback(outcome: AttemptOutcome): GateFeedback {
      const current = config();
      return {
        taskQueue: current.TEMPORAL_TASK_QUEUE,
        answer: partnerAnswer(outcome.httpStatus),
        retryAfterSeconds: outcome.retryAfterMs === undefined ? null : outcome.retryAfterMs / 1000,
        breakerFailures: current.PARTNER_BREAKER_FAILURES,
        probeIntervalMs: current.PARTNER_PROBE_INTERVAL_MS,
      };
    },

    /** The log line of each gate change an attempt's record caused. */
    logGateChange(input: DeliverAttemptInput, outcome: AttemptOutcome, change: GateChange): void {
      if (change.tripped) {
        logger.warn(
          {
            webhookId: input.webhookId,
            breakerFailures: config().PARTNER_BREAKER_FAILURES,
            probeIntervalMs: config().PARTNER_PROBE_INTERVAL_MS,
          },
          'partner breaker tripped: the partner keeps failing, ' +
            'so every delivery is held and one probe at a time checks it',
        );
      }
      if (change.throttledUntil) {
        logger.warn(
          { webhookId: input.webhookId, httpStatus: outcome.httpStatus, until: change.throttledUntil.toISOString() },
          'partner sent Retry-After: every delivery is held until then',
        );
      }
    },
  };
}

export type GateSteps = ReturnType<typeof createGateSteps>;

/** How long one try waits for a send slot before it gives up unclaimed and Temporal retries it. */
const THROTTLED_CLAIM_BUDGET_MS = 10_000;

/** How late past its slot an attempt may still POST in it; later, it takes a new slot (cap plus one per second). */
const LATE_SLOT_MS = 100;

/** The shortest wait before asking for a slot again, so throttled tries do not spin on the gate row. */
const MIN_CLAIM_WAIT_MS = 5;

/** Over the cap for longer than a try may wait: nothing was claimed or sent, and Temporal retries the try. */
function throttledFailure(): ApplicationFailure {
  return ApplicationFailure.create({
    type: 'PartnerRateCap',
    message: 'no send slot within the partner cap yet: the attempt was not started and is retried',
    nextRetryDelay: 1000,
  });
}
