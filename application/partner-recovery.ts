import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import type { Knex } from 'knex';
import type { Config } from '../lib/config';
import { inParallel } from '../lib/in-parallel';
import type { Logger } from '../lib/logger';
import type { PartnerState, ProbeResult } from '../lib/partner-states';
import { partnerProbes } from '../lib/metrics';
import { claimProbe, closeBreaker, markReleased, oldestHeld, readGate, releaseGuardLease, takeGuardLease, type HeldDelivery } from '../store/partner-gate';
import type { TemporalGateway } from './temporal-gateway';

/** How often the guard looks at the gate; a resume or the end of a Retry-After takes effect within it. */
export const GUARD_TICK_MS = 1000;
/** The leader's lease: another worker's guard takes over this long after the leader stops answering. */
const GUARD_LEASE_MS = 5000;
/** Signals in flight at once while waking held deliveries. */
const RELEASE_CONCURRENCY = 16;

export interface PartnerRecoveryDependencies {
  readonly config: Config;
  readonly knex: Knex;
  readonly logger: Logger;
  /** Signals the held deliveries' workflows. */
  readonly gateway: Pick<TemporalGateway, 'release'>;
  /** One probe of the partner (activities/partner-probe.ts). */
  readonly probe: () => Promise<ProbeResult>;
}

/**
 * The partner recovery loop (the "partner guard"): every worker runs one, and the one holding the gate's guard
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
  while (!stop.aborted) {
    try {
      if (await takeGuardLease(knex, taskQueue, owner, GUARD_LEASE_MS)) {
        const state = await recoveryTick(deps);
        if (lastState === 'throttled' && state === 'active') logger.info('partner Retry-After has passed: held deliveries go out at the cap, oldest first');
        lastState = state;
      } else lastState = undefined;
      lastFailure = '';
    } catch (error) {
      // One line per kind of trouble, not one a second: PostgreSQL or Temporal down shows elsewhere too.
      const message = error instanceof Error ? error.message : String(error);
      if (message !== lastFailure) logger.warn({ err: error }, 'the partner guard could not look at the gate; it tries again every second');
      lastFailure = message;
    }
    await delay(GUARD_TICK_MS, undefined, { signal: stop }).catch(() => undefined);
  }
  await releaseGuardLease(knex, taskQueue, owner).catch(() => undefined);
}

/** One look at the gate by the leader: a due probe, or a batch of held deliveries to wake. Returns the state it saw. */
export async function recoveryTick({ config, knex, logger, gateway, probe }: PartnerRecoveryDependencies): Promise<PartnerState> {
  const taskQueue = config.TEMPORAL_TASK_QUEUE;
  const gate = await readGate(knex, taskQueue);
  if (gate.state === 'tripped') {
    if (!(await claimProbe(knex, taskQueue, config.PARTNER_PROBE_INTERVAL_MS))) return gate.state;
    const result = await probe();
    partnerProbes.inc({ outcome: result.verdict });
    if (result.verdict === 'failing') {
      logger.warn({ httpStatus: result.httpStatus, errorClass: result.errorClass, nextProbeInMs: config.PARTNER_PROBE_INTERVAL_MS }, 'partner probe failed: deliveries stay held');
      return gate.state;
    }
    if (await closeBreaker(knex, taskQueue)) {
      logger.info({ httpStatus: result.httpStatus, held: gate.held }, 'partner breaker closed: a probe was answered, held deliveries go out at the cap, oldest first');
    }
    return 'active';
  }
  if (gate.state !== 'active' || gate.held === 0) return gate.state;
  const batch = await oldestHeld(knex, taskQueue, gate.maxPerSecond ?? config.PARTNER_MAX_PER_SECOND);
  await inParallel(batch.length, RELEASE_CONCURRENCY, (i) => wake(batch[i]));
  return gate.state;

  async function wake(held: HeldDelivery): Promise<void> {
    // A run that ended while held has nothing to wake; its row stops counting as held either way.
    await gateway.release(held.workflowId);
    await markReleased(knex, held);
  }
}
