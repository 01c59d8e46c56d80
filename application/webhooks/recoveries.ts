import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { z } from 'zod';
import type { DataAtRest } from '../../lib/at-rest';
import { EVENT_TYPES, FINISHED_STATUSES } from '../../lib/vocabulary';
import { isoDateTime } from '../../lib/keyset-paging';
import { isCanonicalUuid } from '../../lib/validation';
import { signedLinkDeadlines } from '../../events/signed-links';
import { openBody } from '../../store/webhooks/webhook-rows';
import {
  deleteUnstartedRecovery,
  findRecovery,
  insertRecovery,
  recoveryCandidates,
  recoveryOutcomes,
  requestRecoveryCancel,
  type CandidateRow,
  type RecoveryRow,
} from '../../store/webhooks/recoveries';

export type { RecoveryRow };
import type { TemporalGateway } from '../../temporal/gateway';
import { auditedCall, auditedChange, type OperatorContext } from '../access/audit';
import type { PartnerApp } from '../access/partner-apps';
import { parseFilterFields, untilAfterSince, untilAfterSinceIssue } from './webhook-filter';
import { redeliverWebhook, type Redelivery, type RedeliveryOptions } from './webhook-operations';
import { isWebhookOfCompanies } from '../../store/webhooks/webhook-view';
import { NotFoundError, RecoveryRunningError, TemporalUnavailableError } from '../../lib/errors';

// A partner's recovery (POST /partner/v1/recoveries): which originals it redelivers (its plan, also the dry run's
// answer), its start, its progress and its cancel. The batches themselves are recovery-batches.ts, run by the
// recovery workflow (workflows/webhooks/recover-webhooks.ts); docs/decisions.md, "A partner's recovery".

/** The request's body; the OpenAPI document's schema is generated from it. */
export const recoveryBody = z
  .strictObject({
    since: isoDateTime.meta({ description: 'Originals accepted at or after this time (ISO 8601 with a time zone).' }),
    until: isoDateTime.optional().meta({
      description: 'Accepted before this time; defaults to the request time. Must be later than `since`, else 400.',
    }),
    status: z
      .enum(FINISHED_STATUSES, {
        message: `must be one of ${FINISHED_STATUSES.join(', ')}: only finished deliveries are recovered`,
      })
      .default('failed')
      .meta({ description: "The status the original's latest delivery (itself or its newest redelivery) ended with." }),
    event_type: z.enum(EVENT_TYPES).optional(),
    dry_run: z
      .boolean({ message: 'must be true or false' })
      .default(false)
      .meta({ description: 'Start nothing: answer what a recovery would start and skip now (200).' }),
  })
  .refine(untilAfterSince, untilAfterSinceIssue);

export interface RecoveryRequest {
  readonly since: Date;
  readonly until: Date;
  readonly status: (typeof FINISHED_STATUSES)[number];
  readonly eventType?: string;
  readonly dryRun: boolean;
}

/** The body validated (400 otherwise), `until` resolved to `now` when absent. */
export function parseRecoveryBody(body: unknown, now = new Date()): RecoveryRequest {
  const fields = parseFilterFields(recoveryBody, body ?? {});
  return {
    since: fields.since,
    until: fields.until ?? now,
    status: fields.status,
    ...(fields.event_type !== undefined && { eventType: fields.event_type }),
    dryRun: fields.dry_run,
  };
}

/** Why an original of the window is not redelivered. */
export type SkipReason = 'expired_links' | 'payload_removed';

/** What a recovery starts, in the order it starts them, and what it skips. */
export interface RecoveryPlan {
  readonly start: readonly string[];
  readonly skipped: ReadonlyArray<{ readonly webhookId: string; readonly reason: SkipReason }>;
}

/**
 * The originals a recovery of `request` redelivers now, and those it skips: a removed body (retention, erasure), or
 * signed links past their deadline (a recovery never sends dead links; a single redelivery can). The order is the
 * acceptance order, except that the originals of one ordering key take their key's slots in sequence order, so a
 * batch places them in their lane in the original order.
 */
export async function planRecovery(
  knex: Knex,
  atRest: DataAtRest,
  app: Pick<PartnerApp, 'companyIds'>,
  request: RecoveryRequest,
  now = new Date(),
): Promise<RecoveryPlan> {
  const rows = await recoveryCandidates(knex, { ...request, companyIds: app.companyIds });
  const kept: CandidateRow[] = [];
  const skipped: { webhookId: string; reason: SkipReason }[] = [];
  for (const row of rows) {
    const reason = skipReason(atRest, row, now);
    if (reason) skipped.push({ webhookId: row.id, reason });
    else kept.push(row);
  }
  return { start: inLaneOrder(kept).map((row) => row.id), skipped };
}

function skipReason(atRest: DataAtRest, row: CandidateRow, now: Date): SkipReason | undefined {
  const event = row.payload_removed_at === null ? openBody(atRest, row.id, row) : null;
  if (event === null) return 'payload_removed';
  const dead = signedLinkDeadlines(event, row.accepted_at).some(({ expiresAt }) => now > expiresAt);
  return dead ? 'expired_links' : undefined;
}

/** Rows in acceptance order, with each lane's rows re-dealt over that lane's positions by sequence. */
function inLaneOrder(rows: readonly CandidateRow[]): CandidateRow[] {
  const ordered = [...rows];
  const positions = new Map<string, number[]>();
  rows.forEach((row, i) => {
    if (row.lane_id !== null) positions.set(row.lane_id, [...(positions.get(row.lane_id) ?? []), i]);
  });
  for (const slots of positions.values()) {
    const bySeq = slots.map((i) => rows[i]).sort((a, b) => Number(a.seq) - Number(b.seq));
    slots.forEach((slot, k) => (ordered[slot] = bySeq[k]));
  }
  return ordered;
}

/** The request as a recovery's row and its audit row keep it: the API's field names. */
const requestFields = (request: RecoveryRequest) => ({
  since: request.since.toISOString(),
  until: request.until.toISOString(),
  status: request.status,
  ...(request.eventType !== undefined && { event_type: request.eventType }),
});

const skippedCounts = (plan: RecoveryPlan): Record<SkipReason, number> => ({
  expired_links: plan.skipped.filter((s) => s.reason === 'expired_links').length,
  payload_removed: plan.skipped.filter((s) => s.reason === 'payload_removed').length,
});

/**
 * Starts a recovery: its plan written with its row (409 while another of the app's runs), then its workflow. A start
 * that certainly failed takes the row back (503, nothing changed); one in doubt leaves it running, and a cancel
 * starts its workflow again to end it (the workflow id is the recovery's).
 */
export function startRecovery(
  knex: Knex,
  atRest: DataAtRest,
  gateway: TemporalGateway,
  who: OperatorContext,
  app: PartnerApp,
  request: RecoveryRequest,
): Promise<RecoveryRow> {
  const what = { action: 'recovery.start', target: null, parameters: requestFields(request) } as const;
  return auditedCall(knex, who, what, async () => {
    const plan = await planRecovery(knex, atRest, app, request);
    const id = randomUUID();
    const written = await insertRecovery(knex, {
      id,
      appId: app.appId,
      request: requestFields(request),
      skipped: skippedCounts(plan),
      originalIds: plan.start,
    });
    if (!written.inserted) throw new RecoveryRunningError(written.running);
    try {
      await gateway.actingFor(who.actor).startRecovery(id);
    } catch (error) {
      if (!(error instanceof TemporalUnavailableError && error.outcomeUnknown)) await deleteUnstartedRecovery(knex, id);
      throw error;
    }
    return (await findRecovery(knex, app.appId, id))!;
  });
}

/** A recovery of the app's, or 404 (another app's, unknown, or not a uuid: the same answer). */
async function appRecovery(knex: Knex, app: PartnerApp, recoveryId: string): Promise<RecoveryRow> {
  const row = isCanonicalUuid(recoveryId) ? await findRecovery(knex, app.appId, recoveryId) : undefined;
  if (!row) throw new NotFoundError('recovery', recoveryId);
  return row;
}

/** A recovery's progress, as GET /partner/v1/recoveries/{id} answers it. */
export interface RecoveryProgress {
  readonly row: RecoveryRow;
  /** The started redeliveries by status so far: pending, delivered, failed, cancelled. */
  readonly outcomes: Record<string, number>;
}

export async function recoveryProgress(knex: Knex, app: PartnerApp, recoveryId: string): Promise<RecoveryProgress> {
  const row = await appRecovery(knex, app, recoveryId);
  return { row, outcomes: await recoveryOutcomes(knex, row.id) };
}

/**
 * Cancels what a recovery has not started (idempotent; an ended recovery is left as it is). Its workflow sees the
 * request between two groups of starts, removes what its batch wrote and did not start, and ends `cancelled`.
 */
export async function cancelRecovery(
  knex: Knex,
  gateway: TemporalGateway,
  who: OperatorContext,
  app: PartnerApp,
  recoveryId: string,
): Promise<RecoveryRow> {
  // The 404 comes first, unaudited: an audit row must not tell which ids exist.
  await appRecovery(knex, app, recoveryId);
  const what = { action: 'recovery.cancel', target: recoveryId } as const;
  await auditedChange(knex, who, what, (trx) => requestRecoveryCancel(trx, recoveryId));
  const row = await appRecovery(knex, app, recoveryId);
  // A start in doubt may have left no workflow to see the request: starting it again is idempotent.
  if (row.state === 'running') await gateway.actingFor(who.actor).startRecovery(recoveryId);
  return appRecovery(knex, app, recoveryId);
}

/**
 * A partner app's redelivery of one webhook: the operator's (audited `webhook.redeliver` with the app's actor), for a
 * webhook of the app's companies only. Another company's is unknown to the app: the same 404 as an unknown id, before
 * any audit row is written, so the trail tells nothing about which ids exist.
 */
export async function redeliverAppWebhook(
  knex: Knex,
  gateway: TemporalGateway,
  who: OperatorContext,
  app: Pick<PartnerApp, 'companyIds'>,
  webhookId: string,
  options: RedeliveryOptions,
): Promise<Redelivery> {
  if (!isCanonicalUuid(webhookId) || !(await isWebhookOfCompanies(knex, webhookId, app.companyIds)))
    throw new NotFoundError('webhook', webhookId);
  return redeliverWebhook(knex, gateway, who, webhookId, options);
}
