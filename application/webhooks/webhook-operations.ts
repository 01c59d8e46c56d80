import { createHash, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { DataAtRest } from '../../lib/at-rest';
import { inParallel } from '../../lib/in-parallel';
import { FINISHED_STATUSES } from '../../lib/vocabulary';
import {
  findOperableWebhook,
  findRedeliveryCandidates,
  type LogPosition,
  type OperableWebhook,
  type WebhookFilter,
} from '../../store/webhooks/delivery-log';
import { insertRedelivery, recordRun } from '../../store/ingestion/webhook-ingestion';
import { placeOf } from '../../store/ordering/lanes';
import type { StoredWebhook } from '../../store/webhooks/webhook-rows';
import { findWebhookById } from '../../store/webhooks/webhook-view';
import { signedLinkDeadlines } from '../../events/signed-links';
import type { RetryNowResult } from '../../workflows/types';
import { redeliveryIds } from '../ingestion/ids';
import { startOrForget } from '../ingestion/ingest';
import { storedDelivery, storedEvent } from '../ingestion/start-webhook';
import { auditedCall, type OperatorContext } from '../access/audit';
import { settleEndedHead } from '../ordering/ended-heads';
import { type TemporalGateway } from '../../temporal/gateway';
import {
  NotFoundError,
  WebhookConflictError,
  PayloadRemovedError,
  ExpiredLinksError,
  TemporalUnavailableError,
  OperationUnavailableError,
} from '../../lib/errors';

// An operator's actions on one webhook or many: retry-now, cancel, redeliver. The API and the CLI both call
// these; PostgreSQL says which webhook is which, Temporal does the work, through a gateway acting for the
// operator (its identity in Temporal's history). Each action is one audit row, written once its outcome is
// known (auditedCall): a 404 or a 409 is recorded as failed like an outage.

/** Temporal's outage met by an operation is the operation's: the API and the CLI then say what may have changed. */
async function asOperation<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof TemporalUnavailableError)
      throw new OperationUnavailableError(error.reason, error.outcomeUnknown);
    throw error;
  }
}

async function findOrThrow(knex: Knex, webhookId: string): Promise<OperableWebhook> {
  const webhook = await findOperableWebhook(knex, webhookId);
  if (!webhook) throw new NotFoundError('webhook', webhookId);
  return webhook;
}

/** The run of a delivery that has not ended, or a conflict naming the row's status. */
function runningWorkflow(webhook: OperableWebhook, operation: string): string {
  if (webhook.status !== 'pending')
    throw new WebhookConflictError(`Cannot ${operation} a delivery whose status is ${webhook.status}.`);
  if (!webhook.runId || !webhook.workflowId)
    throw new WebhookConflictError(`Cannot ${operation} a delivery whose workflow has not started.`);
  return webhook.workflowId;
}

/**
 * Cuts the wait for the next attempt short; 409 unless the delivery is waiting for one. An attempt under way
 * holds the workflow's task, so an update would only be answered after it: PostgreSQL answers that case at once.
 */
export function retryWebhookNow(
  knex: Knex,
  gateway: TemporalGateway,
  who: OperatorContext,
  webhookId: string,
): Promise<RetryNowResult> {
  return auditedCall(knex, who, { action: 'webhook.retry_now', target: webhookId }, () =>
    asOperation(() => retryNow(knex, gateway.actingFor(who.actor), webhookId)),
  );
}

async function retryNow(knex: Knex, gateway: TemporalGateway, webhookId: string): Promise<RetryNowResult> {
  const webhook = await findOrThrow(knex, webhookId);
  const workflowId = runningWorkflow(webhook, 'retry');
  if (!webhook.waiting) throw new WebhookConflictError('Cannot retry a delivery that is sending an attempt now.');
  // The workflow's validator has the last word: the wait may have ended since.
  return gateway.retryNow(workflowId);
}

/**
 * Asks a pending delivery's run to cancel; the workflow records `cancelled` in PostgreSQL and in WebhookStatus. A
 * run that had ended without recording its end (Temporal takes a cancel of a closed run, or answers NotFound: 409)
 * has that end recorded now and its place settled, so an ordered webhook's key does not wait for it.
 */
export function cancelWebhook(
  knex: Knex,
  gateway: TemporalGateway,
  who: OperatorContext,
  webhookId: string,
): Promise<void> {
  return auditedCall(knex, who, { action: 'webhook.cancel', target: webhookId }, () =>
    asOperation(async () => {
      const workflowId = runningWorkflow(await findOrThrow(knex, webhookId), 'cancel');
      const settleIfEnded = () => settleEndedHead({ knex, gateway }, { webhookId, workflowId });
      await gateway
        .actingFor(who.actor)
        .cancel(workflowId)
        .catch(async (error: unknown) => {
          if (error instanceof WebhookConflictError) await settleIfEnded();
          throw error;
        });
      await settleIfEnded();
    }),
  );
}

/** A redelivery, and whether this call started it (false: an earlier call with the same key had). */
export interface Redelivery {
  readonly webhookId: string;
  readonly workflowId: string;
  readonly runId: string;
  readonly redeliveryOf: string;
  readonly started: boolean;
}

const isFinished = (status: string) => (FINISHED_STATUSES as readonly string[]).includes(status);

/** How a redelivery treats signed links past their deadline, and the clock that says whether they are. */
export interface RedeliveryOptions {
  readonly sendTimeoutMs: number;
  /** How the original's body rests (lib/at-rest.ts). */
  readonly atRest: DataAtRest;
  /** Send links that are certainly dead anyway: an operator's explicit choice. */
  readonly allowExpiredLinks?: boolean;
  readonly now?: () => Date;
}

/** Throws ExpiredLinksError when the original's signed links are dead and the operator did not allow that. */
function checkSignedLinks(
  original: StoredWebhook,
  { allowExpiredLinks = false, now = () => new Date() }: RedeliveryOptions,
): void {
  if (allowExpiredLinks) return;
  const at = now();
  const expired = signedLinkDeadlines(storedEvent(original), original.acceptedAt).filter(
    ({ expiresAt }) => at > expiresAt,
  );
  if (expired.length) throw new ExpiredLinksError(expired, original.acceptedAt);
}

/** Starts a new delivery of a finished webhook, with the original's event and webhook-id header. */
export function redeliverWebhook(
  knex: Knex,
  gateway: TemporalGateway,
  who: OperatorContext,
  webhookId: string,
  options: RedeliveryOptions,
): Promise<Redelivery> {
  const what = {
    action: 'webhook.redeliver',
    target: webhookId,
    parameters: { allow_expired_links: options.allowExpiredLinks ?? false },
  } as const;
  return auditedCall(knex, who, what, () => redeliverOne(knex, gateway.actingFor(who.actor), webhookId, options));
}

function redeliverOne(
  knex: Knex,
  gateway: TemporalGateway,
  webhookId: string,
  options: RedeliveryOptions,
): Promise<Redelivery> {
  return asOperation(async () => {
    const webhook = await findOrThrow(knex, webhookId);
    if (!isFinished(webhook.status))
      throw new WebhookConflictError(`Only a finished delivery can be redelivered; this one is ${webhook.status}.`);
    // Each call is an operator's explicit request for one more delivery.
    return startRedelivery(knex, gateway, webhook.redeliveryOf ?? webhook.webhookId, `single:${randomUUID()}`, options);
  });
}

/**
 * Writes (or finds) the redelivery of `originalId` under `key` and starts its workflow. Like ingestion, a
 * start that certainly failed leaves no row behind; one whose outcome is unknown keeps it for a retry. Throws
 * ExpiredLinksError, writing nothing, when the event's signed links are dead and that is not allowed.
 */
async function startRedelivery(
  knex: Knex,
  gateway: TemporalGateway,
  originalId: string,
  key: string,
  options: RedeliveryOptions,
): Promise<Redelivery> {
  const { sendTimeoutMs } = options;
  const original = await findWebhookById(knex, options.atRest, originalId);
  if (!original) throw new NotFoundError('webhook', originalId);
  const { event_type, action } = storedEvent(original);
  checkSignedLinks(original, options);
  const row = await insertRedelivery(knex, options.atRest, {
    ...redeliveryIds({ event_type, action, event_id: original.eventId }),
    originalId,
    key,
  });
  const done = (runId: string, started: boolean) => ({
    webhookId: row.webhookId,
    workflowId: row.workflowId,
    runId,
    redeliveryOf: originalId,
    started,
  });
  if (row.startReported && row.runId) return done(row.runId, false);
  const delivery = storedDelivery({ ...original, webhookId: row.webhookId, workflowId: row.workflowId }, sendTimeoutMs);
  // Out of band: an ordered original's redelivery does not wait for its key, and sends the original's number.
  const ordering = await placeOf(knex, options.atRest, originalId);
  const runId = await startOrForget(knex, gateway, {
    ...delivery,
    input: { ...delivery.input, redeliveryOf: originalId, ...(ordering && { ordering }) },
  });
  return done(runId, await recordRun(knex, row.webhookId, runId, { reported: true }));
}

/** The key of a bulk redelivery: the same filters make the same key, so a repeated call starts nothing new. */
export function bulkRedeliveryKey(filter: WebhookFilter): string {
  const canonical = JSON.stringify([
    filter.status,
    filter.eventType,
    filter.action,
    filter.companyId,
    filter.since?.toISOString(),
    filter.until?.toISOString(),
  ]);
  return `bulk:${createHash('sha256').update(canonical).digest('hex')}`;
}

export interface BulkRedeliveryOptions extends RedeliveryOptions {
  /** Stop after starting this many; a repeated call goes on where this one stopped. */
  readonly limit: number;
  /** Rows read per query, and so the most redeliveries in flight from one batch. */
  readonly batchSize?: number;
  /** Workflow starts at once. */
  readonly concurrency?: number;
}

/**
 * What a bulk redelivery did: redeliveries started, originals skipped because their signed links are past their
 * deadline (not allowed) or their body was removed (retention, erasure), and whether matches are left because
 * `limit` was reached.
 */
export interface BulkRedelivery {
  readonly started: number;
  readonly skipped_expired_links: number;
  readonly skipped_payload_removed: number;
  readonly more: boolean;
}

/**
 * Redelivers every finished webhook matching `filter` whose original has no redelivery under this filter's
 * key yet, newest first, in batches. Each original is redelivered once, however many of its deliveries match.
 */
export function redeliverMatching(
  knex: Knex,
  gateway: TemporalGateway,
  who: OperatorContext,
  filter: WebhookFilter,
  options: BulkRedeliveryOptions,
): Promise<BulkRedelivery> {
  const what = {
    action: 'webhooks.redeliver',
    target: null,
    parameters: bulkRedeliveryParameters(filter, options),
  } as const;
  return auditedCall(knex, who, what, () =>
    asOperation(() => redeliverInBatches(knex, gateway.actingFor(who.actor), filter, options)),
  );
}

/** A bulk redelivery's request as its audit row keeps it: the API's field names, the unset filters left out. */
export function bulkRedeliveryParameters(
  filter: WebhookFilter,
  options: Pick<BulkRedeliveryOptions, 'limit' | 'allowExpiredLinks'>,
): Record<string, unknown> {
  const fields = {
    status: filter.status,
    event_type: filter.eventType,
    action: filter.action,
    company_id: filter.companyId,
    since: filter.since?.toISOString(),
    until: filter.until?.toISOString(),
  };
  const given = Object.fromEntries(
    Object.entries(fields).filter((field): field is [string, string] => field[1] !== undefined),
  );
  return { ...given, limit: options.limit, allow_expired_links: options.allowExpiredLinks ?? false };
}

async function redeliverInBatches(
  knex: Knex,
  gateway: TemporalGateway,
  filter: WebhookFilter,
  { limit, batchSize = 100, concurrency = 8, ...options }: BulkRedeliveryOptions,
): Promise<BulkRedelivery> {
  const key = bulkRedeliveryKey(filter);
  let started = 0;
  // Originals, so one whose deliveries match twice is counted once.
  const expired = new Set<string>();
  const removed = new Set<string>();
  const outcome = (more: boolean): BulkRedelivery => ({
    started,
    skipped_expired_links: expired.size,
    skipped_payload_removed: removed.size,
    more,
  });
  let after: LogPosition | undefined;
  while (started < limit) {
    const batch = await findRedeliveryCandidates(knex, filter, key, {
      limit: Math.min(batchSize, limit - started),
      after,
    });
    if (!batch.last) return outcome(false);
    const originals = [...new Set(batch.candidates.map((candidate) => candidate.originalId))];
    await inParallel(originals.length, concurrency, async (i) => {
      try {
        const redelivery = await startRedelivery(knex, gateway, originals[i], key, options);
        if (redelivery.started) started++;
      } catch (error) {
        // A body the retention purge or an erasure removed is checked first: there is no event to look at.
        if (error instanceof PayloadRemovedError) removed.add(originals[i]);
        else if (error instanceof ExpiredLinksError) expired.add(originals[i]);
        else throw error;
      }
    });
    after = batch.last;
  }
  const left = await findRedeliveryCandidates(knex, filter, key, { limit: 1, after });
  return outcome(left.candidates.length > 0);
}
