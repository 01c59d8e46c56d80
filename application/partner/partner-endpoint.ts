import type { Knex } from 'knex';
import { z } from 'zod';
import type { Config } from '../../lib/config';
import { InvalidRequestError, PausedByOperatorError } from '../../lib/errors';
import type { Logger } from '../../lib/logger';
import type { PartnerState } from '../../lib/partner-states';
import {
  limitGateForPartner,
  pauseGateForPartner,
  rateInForce,
  readGate,
  resumeGateForPartner,
  type GateView,
} from '../../store/partner/partner-gate';
import { auditedChange, type OperatorContext } from '../access/audit';
import { listSigningSecretSummaries, type SigningSecretSummary } from './signing-secrets';
import { onQueue, parseAudited, pauseRequest } from './partner-operator';

// The partner's own controls of its endpoint, through the partner API (docs/partners.md, "Your endpoint"): the
// endpoint's state, the partner's own pause and resume, and its own rate. They sit beside an operator's on the
// same gate (store/partner/partner-gate.ts): a partner's pause holds deliveries exactly as an operator's does,
// a partner's resume never ends an operator's pause, and the partner's rate only ever lowers the cap.

/** What the partner's controls act with: the database, the configuration and the log. */
export interface EndpointControls {
  readonly knex: Knex;
  readonly config: Config;
  readonly logger: Logger;
}

/** One pause in force: the operator's (`operator`, never a token or a person) or an app's (`app:<app_id>`). */
export interface EndpointPause {
  readonly paused_by: string;
  readonly reason: string;
  readonly since: Date;
}

/** GET /partner/v1/endpoint. */
export interface PartnerEndpoint {
  readonly state: PartnerState;
  /** When the hold in force began; null while active. */
  readonly since: Date | null;
  /** The pauses in force, the operator's first: while it lasts, only the operator's resume ends the hold. */
  readonly pauses: readonly EndpointPause[];
  /** The partner's own rate; null: the deployment's cap. */
  readonly max_per_second: number | null;
  /** The operator's run-time cap, else PARTNER_MAX_PER_SECOND. */
  readonly deployment_max_per_second: number;
  /** The lower of the two: the POSTs per second of every worker together. */
  readonly rate_in_force: number;
  /** Until when the partner's own Retry-After holds deliveries (state `throttled`). */
  readonly retry_after_until: Date | null;
  readonly breaker: {
    readonly state: 'closed' | 'open';
    readonly consecutive_failures: number;
    readonly failures_to_trip: number;
    readonly next_probe_at: Date | null;
  };
  /** Deliveries waiting for the hold to end; none of their attempts is spent. */
  readonly held: number;
  readonly signing_secrets: readonly SigningSecretSummary[];
}

/** The body of PATCH /partner/v1/endpoint; the OpenAPI document's schema is generated from it. */
export const endpointLimitRequest = z.strictObject({
  max_per_second: z
    .union([z.number().int({ message: 'must be a whole number' }).min(1).max(100_000), z.null()], {
      message: "must be a whole number from 1 to the deployment's cap, or null for the deployment's cap",
    })
    .meta({
      description:
        "POSTs per second of every worker together, at most the deployment's cap (`deployment_max_per_second`); " +
        "null: the deployment's cap.",
    }),
});

/** The deployment's cap: the operator's run-time cap, else PARTNER_MAX_PER_SECOND. */
const deploymentCap = (gate: GateView, config: Config) => gate.maxPerSecond ?? config.PARTNER_MAX_PER_SECOND;

function pausesOf(gate: GateView): EndpointPause[] {
  const pauses: EndpointPause[] = [];
  if (gate.pausedAt) pauses.push({ paused_by: 'operator', reason: gate.pauseReason!, since: gate.pausedAt });
  const own = gate.partnerPause;
  if (own) pauses.push({ paused_by: own.pausedBy, reason: own.reason, since: own.pausedAt });
  return pauses;
}

export async function partnerEndpoint(knex: Knex, config: Config): Promise<PartnerEndpoint> {
  const gate = await readGate(knex, config.TEMPORAL_TASK_QUEUE);
  return {
    state: gate.state,
    since: gate.since,
    pauses: pausesOf(gate),
    max_per_second: gate.partnerMaxPerSecond,
    deployment_max_per_second: deploymentCap(gate, config),
    rate_in_force: rateInForce(gate, config.PARTNER_MAX_PER_SECOND),
    retry_after_until: gate.state === 'throttled' ? gate.retryAfterUntil : null,
    breaker: {
      state: gate.trippedAt ? 'open' : 'closed',
      consecutive_failures: gate.consecutiveFailures,
      failures_to_trip: config.PARTNER_BREAKER_FAILURES,
      next_probe_at: gate.nextProbeAt,
    },
    held: gate.held,
    signing_secrets: await listSigningSecretSummaries(knex, config),
  };
}

/**
 * The partner's own pause: every delivery is held as under an operator's pause (nothing dropped, no attempt
 * spent). Pausing again changes nothing and answers the state: the first pause keeps its time, reason and app.
 */
export async function pauseEndpoint(
  { knex, config, logger }: EndpointControls,
  who: OperatorContext,
  body: unknown,
): Promise<PartnerEndpoint> {
  const { reason } = await parseAudited(knex, who, onQueue(config, 'endpoint.pause'), pauseRequest, body);
  return auditedChange(knex, who, onQueue(config, 'endpoint.pause', { reason }), async (trx) => {
    if (await pauseGateForPartner(trx, config.TEMPORAL_TASK_QUEUE, reason, who.actor))
      logger.warn({ actor: who.actor }, 'partner paused its endpoint: no POST leaves any worker until resume');
    return partnerEndpoint(trx, config);
  });
}

/**
 * Ends the partner's own pause; held deliveries then go out at the rate in force, oldest first (the partner
 * recovery). While an operator's pause is in force nothing changes: PausedByOperatorError (409).
 */
export async function resumeEndpoint(
  { knex, config, logger }: EndpointControls,
  who: OperatorContext,
): Promise<PartnerEndpoint> {
  return auditedChange(knex, who, onQueue(config, 'endpoint.resume'), async (trx) => {
    const gate = await readGate(trx, config.TEMPORAL_TASK_QUEUE);
    if (gate.pausedAt) throw new PausedByOperatorError(gate.pauseReason!);
    if (await resumeGateForPartner(trx, config.TEMPORAL_TASK_QUEUE))
      logger.info(
        { actor: who.actor },
        'partner resumed its endpoint: held deliveries go out at the cap, oldest first',
      );
    return partnerEndpoint(trx, config);
  });
}

/**
 * The partner's own rate, at most the deployment's cap (400 naming it), null for the deployment's; every worker's
 * claim takes the lower of the two at once. An operator who later lowers the cap below it wins the same way.
 */
export async function limitEndpoint(
  { knex, config, logger }: EndpointControls,
  who: OperatorContext,
  body: unknown,
): Promise<PartnerEndpoint> {
  const what = onQueue(config, 'endpoint.limit');
  const { max_per_second: maxPerSecond } = await parseAudited(knex, who, what, endpointLimitRequest, body);
  return auditedChange(knex, who, onQueue(config, 'endpoint.limit', { max_per_second: maxPerSecond }), async (trx) => {
    const cap = deploymentCap(await readGate(trx, config.TEMPORAL_TASK_QUEUE), config);
    if (maxPerSecond !== null && maxPerSecond > cap) throw aboveCap(cap);
    await limitGateForPartner(trx, config.TEMPORAL_TASK_QUEUE, maxPerSecond);
    logger.info({ maxPerSecond, cap, actor: who.actor }, 'partner set its own rate');
    return partnerEndpoint(trx, config);
  });
}

const aboveCap = (cap: number) =>
  new InvalidRequestError(
    [{ path: 'max_per_second', message: `must be at most the deployment's cap, ${cap}` }],
    `max_per_second is above the deployment's cap of ${cap} per second.`,
  );
