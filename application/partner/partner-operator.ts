import type { Knex } from 'knex';
import { z } from 'zod';
import type { Config } from '../../lib/config';
import type { Logger } from '../../lib/logger';
import type { PartnerSnapshot } from '../../lib/metrics';
import { isStorableText, zodPathErrors } from '../../lib/validation';
import { auditedChange, recordFailedAndThrow, type AuditedAction, type OperatorContext } from '../access/audit';
import {
  limitGate,
  pauseGate,
  rateInForce,
  readGate,
  resumeGate,
  type GateView,
} from '../../store/partner/partner-gate';
import { InvalidRequestError } from '../../lib/errors';

// An operator's controls of partner protection (lib/partner-states.ts), shared by the internal API and the
// CLI: status, pause, resume and the cap. Each change is logged once, by the call that made it, and recorded
// in the audit trail in the same transaction (application/access/audit.ts), its target the task queue.

/** The partner's status as the API and `partner-service partner status` print it. */
export interface PartnerStatus {
  readonly state: GateView['state'];
  /** The operator's reason while paused. */
  readonly reason: string | null;
  /** When the hold in force began; null while active. */
  readonly since: Date | null;
  /** Deliveries whose next attempt waits for the hold to end (none of them spent). */
  readonly held: number;
  readonly max_per_second: number;
  /** `operator`: set at run time (`partner limit`); `configuration`: PARTNER_MAX_PER_SECOND. */
  readonly max_per_second_source: 'operator' | 'configuration';
  /** The partner's own rate (PATCH /partner/v1/endpoint); null: none. */
  readonly partner_max_per_second: number | null;
  /** The POSTs per second in force: the lower of max_per_second and partner_max_per_second. */
  readonly rate_in_force: number;
  /** The partner's own pause (POST /partner/v1/endpoint/pause): which app, why, since when. */
  readonly partner_pause: { readonly paused_by: string; readonly reason: string; readonly since: Date } | null;
  readonly retry_after_until: Date | null;
  readonly hold_ceiling_seconds: number;
  readonly breaker: {
    readonly consecutive_failures: number;
    readonly failures_to_trip: number;
    readonly trips: number;
    readonly tripped_at: Date | null;
    readonly next_probe_at: Date | null;
  };
}

function asStatus(gate: GateView, config: Config): PartnerStatus {
  return {
    state: gate.state,
    reason: gate.pauseReason,
    since: gate.since,
    held: gate.held,
    max_per_second: gate.maxPerSecond ?? config.PARTNER_MAX_PER_SECOND,
    max_per_second_source: gate.maxPerSecond === null ? 'configuration' : 'operator',
    partner_max_per_second: gate.partnerMaxPerSecond,
    rate_in_force: rateInForce(gate, config.PARTNER_MAX_PER_SECOND),
    partner_pause: gate.partnerPause && {
      paused_by: gate.partnerPause.pausedBy,
      reason: gate.partnerPause.reason,
      since: gate.partnerPause.pausedAt,
    },
    retry_after_until: gate.state === 'throttled' ? gate.retryAfterUntil : null,
    hold_ceiling_seconds: config.PARTNER_HOLD_CEILING_MS / 1000,
    breaker: {
      consecutive_failures: gate.consecutiveFailures,
      failures_to_trip: config.PARTNER_BREAKER_FAILURES,
      trips: gate.trips,
      tripped_at: gate.trippedAt,
      next_probe_at: gate.nextProbeAt,
    },
  };
}

export async function partnerStatus(knex: Knex, config: Config): Promise<PartnerStatus> {
  return asStatus(await readGate(knex, config.TEMPORAL_TASK_QUEUE), config);
}

/** What the partner gauges show, from one read of the gate. */
export async function partnerSnapshot(knex: Knex, config: Config, now = Date.now()): Promise<PartnerSnapshot> {
  const status = await partnerStatus(knex, config);
  return {
    state: status.state,
    holdSeconds: status.since ? Math.max(0, (now - status.since.getTime()) / 1000) : 0,
    held: status.held,
    trips: status.breaker.trips,
    maxPerSecond: status.rate_in_force,
  };
}

/** The longest pause reason, in characters once trimmed. */
export const MAX_PAUSE_REASON = 500;

/** JavaScript's String.prototype.trim white space: the pause reason is trimmed before its length is checked. */
const JS_SPACE = '\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff';
/**
 * The checks below (trimmed, 1 to MAX_PAUSE_REASON characters, no NUL) as one pattern, for the OpenAPI
 * document: zod's JSON Schema cannot see a length counted after a trim.
 */
const PAUSE_REASON_PATTERN =
  `^[${JS_SPACE}]*[^${JS_SPACE}\\u0000]` +
  `(?:[^\\u0000]{0,${MAX_PAUSE_REASON - 2}}[^${JS_SPACE}\\u0000])?[${JS_SPACE}]*$`;

/** The body of a pause; the OpenAPI document's schema is generated from it. */
export const pauseRequest = z.strictObject({
  reason: z
    .string({ message: 'must be a string' })
    .trim()
    .min(1, { message: 'must say why (1 to 500 characters)' })
    // Characters are code points, as the OpenAPI document's pattern counts them (not UTF-16 units).
    .refine((reason) => [...reason].length <= MAX_PAUSE_REASON, {
      message: `must be at most ${MAX_PAUSE_REASON} characters`,
    })
    .refine(isStorableText, { message: 'must be text PostgreSQL can store' })
    .meta({
      pattern: PAUSE_REASON_PATTERN,
      description:
        `Why, for the status and the log: 1 to ${MAX_PAUSE_REASON} characters once the white space around it is ` +
        `trimmed, no NUL.`,
    }),
});

/** The body of a limit; the OpenAPI document's schema is generated from it. */
export const limitRequest = z.strictObject({
  max_per_second: z
    .union([z.number().int({ message: 'must be a whole number' }).min(1).max(100_000), z.null()], {
      message: 'must be a whole number from 1 to 100000, or null for PARTNER_MAX_PER_SECOND',
    })
    .meta({ description: 'null: back to PARTNER_MAX_PER_SECOND.' }),
});

/** The request's settings, or its refusal recorded as failed (no parameters: the input did not hold up). */
export async function parseAudited<T>(
  knex: Knex,
  who: OperatorContext,
  what: AuditedAction,
  schema: z.ZodType<T>,
  body: unknown,
): Promise<T> {
  const parsed = schema.safeParse(body);
  if (!parsed.success)
    return recordFailedAndThrow(knex, who, what, new InvalidRequestError(zodPathErrors(parsed.error)));
  return parsed.data;
}

export const onQueue = (
  config: Config,
  action: AuditedAction['action'],
  parameters?: Record<string, unknown>,
): AuditedAction => ({ action, target: config.TEMPORAL_TASK_QUEUE, parameters });

/** Holds every delivery: accepted webhooks wait in Temporal, their next attempt unspent, until resume. */
export async function pausePartner(
  knex: Knex,
  config: Config,
  logger: Logger,
  who: OperatorContext,
  body: unknown,
): Promise<PartnerStatus> {
  const { reason } = await parseAudited(knex, who, onQueue(config, 'partner.pause'), pauseRequest, body);
  return auditedChange(knex, who, onQueue(config, 'partner.pause', { reason }), async (trx) => {
    if (await pauseGate(trx, config.TEMPORAL_TASK_QUEUE, reason))
      logger.warn({ reason, actor: who.actor }, 'partner paused: no POST leaves any worker until resume');
    return partnerStatus(trx, config);
  });
}

/**
 * Ends a pause, an operator's and the partner's own alike; the partner recovery (partner-recovery.ts) then wakes
 * held deliveries at the cap, oldest first.
 */
export async function resumePartner(
  knex: Knex,
  config: Config,
  logger: Logger,
  who: OperatorContext,
): Promise<PartnerStatus> {
  return auditedChange(knex, who, onQueue(config, 'partner.resume'), async (trx) => {
    if (await resumeGate(trx, config.TEMPORAL_TASK_QUEUE))
      logger.info({ actor: who.actor }, 'partner resumed: held deliveries go out at the cap, oldest first');
    return partnerStatus(trx, config);
  });
}

/** Sets the cap of every worker together, at run time; null goes back to PARTNER_MAX_PER_SECOND. */
export async function limitPartner(
  knex: Knex,
  config: Config,
  logger: Logger,
  who: OperatorContext,
  body: unknown,
): Promise<PartnerStatus> {
  const { max_per_second: maxPerSecond } = await parseAudited(
    knex,
    who,
    onQueue(config, 'partner.limit'),
    limitRequest,
    body,
  );
  return auditedChange(knex, who, onQueue(config, 'partner.limit', { max_per_second: maxPerSecond }), async (trx) => {
    await limitGate(trx, config.TEMPORAL_TASK_QUEUE, maxPerSecond);
    logger.info(
      {
        maxPerSecond: maxPerSecond ?? config.PARTNER_MAX_PER_SECOND,
        source: maxPerSecond === null ? 'configuration' : 'operator',
        actor: who.actor,
      },
      'partner rate cap changed',
    );
    return partnerStatus(trx, config);
  });
}
