import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import type { Knex } from 'knex';
import type { Config } from '../../lib/config';
import { inParallel } from '../../lib/in-parallel';
import type { Logger } from '../../lib/logger';
import type { PartnerState, ProbeResult } from '../../lib/partner-states';
import { partnerProbes } from '../../lib/metrics';
import {
  claimProbe,
  closeBreaker,
  markReleased,
  oldestHeld,
  rateInForce,
  readGate,
  releaseRecoveryLease,
  SEND_SLOT_HORIZON_MS,
  takeRecoveryLease,
  type HeldDelivery,
} from '../../store/partner/partner-gate';
import type { TemporalGateway } from '../../temporal/gateway';

/**
 * How often the partner recovery looks at the gate, counted from the start of one look to the start of the next (a look
 * that takes longer is followed at once); a resume or the end of a Retry-After takes effect within it.
 */
export const RECOVERY_TICK_MS = 1000;
/**
 * The most time one release batch makes up for. A slow tick is caught up by the next, so the release keeps
 * the clock's pace; after a stall (a lost lease, a long pause of the process) it goes on at the cap, not in a burst.
 */
export const RELEASE_CATCH_UP_MS = 2 * RECOVERY_TICK_MS;
/** The leader's lease: another worker's partner recovery takes over this long after the leader stops answering. */
const RECOVERY_LEASE_MS = 5000;
/**
 * Signals in flight at once while waking held deliveries: a batch at a usual cap goes out in one round, so a
 * look lasts about one signal's round trip. A look longer than the claim's horizon would release less than
 * the cap, as a batch never exceeds the send slots free within that horizon.
 */
export const RELEASE_CONCURRENCY = 64;

export interface PartnerRecoveryDependencies {
  readonly config: Config;
  readonly knex: Knex;
  readonly logger: Logger;
  /** Signals the held deliveries' workflows. */
  readonly gateway: Pick<TemporalGateway, 'release'>;
  /** One probe of the partner (partner-client/partner-probe.ts). */
  readonly probe: () => Promise<ProbeResult>;
}

/**
 * The partner recovery loop: every worker runs one, and the one holding the gate's recovery
 * lease acts for the task queue. While the breaker is tripped it sends the one probe that is due; while the gate
 * is open it wakes held deliveries, oldest first, as many a second as the cap allows, so a hold ends without a
 * thundering herd. Runs until `stop` aborts.
 */
export async function runPartnerRecovery(deps: PartnerRecoveryDependencies, stop: AbortSignal): Promise<void> {
  const { config, knex, logger } = deps;
  const taskQueue = config.TEMPORAL_TASK_QUEUE;
  const owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  let lastFailure = '';
  let lastState: PartnerState | undefined;
  const pace = releasePace();
  while (!stop.aborted) {
    const tickStartedAt = performance.now();
    try {
      if (await takeRecoveryLease(knex, taskQueue, owner, RECOVERY_LEASE_MS)) {
        const state = await recoveryTick(deps, pace);
        if (lastState === 'throttled' && state === 'active')
          logger.info('partner Retry-After has passed: held deliveries go out at the cap, oldest first');
        lastState = state;
      } else {
        lastState = undefined;
        // Another worker's recovery releases meanwhile: a lease taken back starts at one tick's worth.
        Object.assign(pace, releasePace());
      }
      lastFailure = '';
    } catch (error) {
      // One line per kind of trouble, not one a second: PostgreSQL or Temporal down shows elsewhere too.
      const message = error instanceof Error ? error.message : String(error);
      if (message !== lastFailure)
        logger.warn({ err: error }, 'the partner recovery could not look at the gate; it tries again every second');
      lastFailure = message;
    }
    // On a cadence from each tick's start: the tick's own length does not slow the release down.
    const untilNextTick = Math.max(0, RECOVERY_TICK_MS - (performance.now() - tickStartedAt));
    await delay(untilNextTick, undefined, { signal: stop }).catch(() => undefined);
  }
  await releaseRecoveryLease(knex, taskQueue, owner).catch(() => undefined);
}

/**
 * The release's account: when the last batch was sized (performance.now()), and the fraction of a delivery
 * the time since earned but no batch woke yet. A fresh one (no batch yet) wakes one tick's worth first.
 */
export interface ReleasePace {
  lastAt: number | undefined;
  owed: number;
}

export const releasePace = (): ReleasePace => ({ lastAt: undefined, owed: 0 });

/**
 * How many held deliveries the tick at `now` wakes at `maxPerSecond`: the cap times the time since the last
 * batch (at most RELEASE_CATCH_UP_MS), plus what earlier batches owed, so that over any run of ticks the
 * release follows the clock whatever each tick's length. Moves the account on to `now`.
 */
export function releaseBatchSize(pace: ReleasePace, maxPerSecond: number, now: number): number {
  const elapsedMs =
    pace.lastAt === undefined ? RECOVERY_TICK_MS : Math.min(Math.max(0, now - pace.lastAt), RELEASE_CATCH_UP_MS);
  const earned = pace.owed + (maxPerSecond * elapsedMs) / 1000;
  const size = Math.floor(earned);
  pace.lastAt = now;
  pace.owed = earned - size;
  return size;
}

/**
 * How far ahead a batch may count on send slots: a woken delivery claims within the look's time (at most a tick
 * after its signal), and its claim takes a slot up to SEND_SLOT_HORIZON_MS past that.
 */
export const RELEASE_SLOT_WINDOW_MS = RECOVERY_TICK_MS + SEND_SLOT_HORIZON_MS;

/** The send slots of the release's window that no claim has taken yet. */
export const freeSendSlots = (maxPerSecond: number, slotsTakenAheadMs: number): number =>
  Math.floor((maxPerSecond * Math.max(0, RELEASE_SLOT_WINDOW_MS - slotsTakenAheadMs)) / 1000);

/**
 * One look at the gate by the leader: a due probe, or a batch of held deliveries to wake, sized by `pace` (a
 * fresh account, by default: one tick's worth). Returns the state it saw.
 */
export async function recoveryTick(
  { config, knex, logger, gateway, probe }: PartnerRecoveryDependencies,
  pace: ReleasePace = releasePace(),
  now = performance.now(),
): Promise<PartnerState> {
  const taskQueue = config.TEMPORAL_TASK_QUEUE;
  const gate = await readGate(knex, taskQueue);
  const releasing = gate.state === 'active' && gate.held > 0;
  // Nothing to release: the next release starts afresh, with no credit for the time without one.
  if (!releasing) Object.assign(pace, releasePace());
  if (gate.state === 'tripped') {
    if (!(await claimProbe(knex, taskQueue, config.PARTNER_PROBE_INTERVAL_MS))) return gate.state;
    const result = await probe();
    partnerProbes.inc({ outcome: result.answer });
    if (result.answer === 'failing') {
      logger.warn(
        {
          httpStatus: result.httpStatus,
          errorClass: result.errorClass,
          nextProbeInMs: config.PARTNER_PROBE_INTERVAL_MS,
        },
        'partner probe failed: deliveries stay held',
      );
      return gate.state;
    }
    if (await closeBreaker(knex, taskQueue)) {
      logger.info(
        { httpStatus: result.httpStatus, held: gate.held },
        'partner breaker closed: a probe was answered, held deliveries go out at the cap, oldest first',
      );
    }
    return 'active';
  }
  if (!releasing) return gate.state;
  const maxPerSecond = rateInForce(gate, config.PARTNER_MAX_PER_SECOND);
  const earned = releaseBatchSize(pace, maxPerSecond, now);
  // No more than the send slots its deliveries can still take: one woken beyond them would find no slot, ask
  // again later and lose its turn to a younger one, so the oldest-first order would not hold.
  const size = Math.min(earned, freeSendSlots(maxPerSecond, gate.slotsTakenAheadMs));
  if (size < earned) pace.owed = 0;
  if (size === 0) return gate.state;
  const batch = await oldestHeld(knex, taskQueue, size);
  // Fewer held than earned: the rest of the credit is dropped, so deliveries held later do not go out in a burst.
  if (batch.length < size) pace.owed = 0;
  await inParallel(batch.length, RELEASE_CONCURRENCY, (i) => wake(batch[i]));
  return gate.state;

  async function wake(held: HeldDelivery): Promise<void> {
    // A run that ended while held has nothing to wake; its row stops counting as held either way.
    await gateway.release(held.workflowId);
    await markReleased(knex, held);
  }
}
