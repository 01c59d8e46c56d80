import type { Knex } from 'knex';
import { auditedChange, type OperatorContext } from '../access/audit';
import { signedLinkDeadlines } from '../../events/signed-links';
import type { WebhookFilter } from '../../store/webhooks/delivery-log';
import { countRedelivery, findOriginals } from '../../store/webhooks/redelivery-preview';
import { asStoredWebhook } from '../../store/webhooks/webhook-rows';
import { storedEvent } from '../ingestion/start-webhook';
import { bulkRedeliveryKey, bulkRedeliveryParameters, type BulkRedeliveryOptions } from './webhook-operations';

// A bulk redelivery's dry run: what the same request would start and skip, counted in PostgreSQL without a
// start, a row or a call to Temporal. It is audited as the redelivery is, with `dry_run: true`.

/** The dry run's answer: the redelivery's, with `would_start` for `started`. */
export interface BulkRedeliveryPreview {
  readonly dry_run: true;
  readonly would_start: number;
  readonly skipped_expired_links: number;
  readonly skipped_payload_removed: number;
  readonly more: boolean;
}

export type PreviewOptions = Pick<BulkRedeliveryOptions, 'limit' | 'atRest' | 'allowExpiredLinks' | 'now'>;

/** What redeliverMatching would do with the same filter and options, now; one audit row (it changes nothing). */
export function previewRedelivery(knex: Knex, who: OperatorContext, filter: WebhookFilter, options: PreviewOptions): Promise<BulkRedeliveryPreview> {
  const what = { action: 'webhooks.redeliver', target: null, parameters: { ...bulkRedeliveryParameters(filter, options), dry_run: true } } as const;
  return auditedChange(knex, who, what, async (trx) => ({ dry_run: true, ...(await countInSql(trx, filter, options)) }));
}

/**
 * The redelivery's walk replayed over a window of the newest matches, `limit` + 1 at first (the stop and one match
 * past it), doubled while the window neither holds every match nor settles the answer (skips pushed the stop past
 * it, or only started originals' other matches follow it). A sealed body is opened only once the walk certainly
 * reaches its original (at or before the stop, counting each unopened one as a start): it opens at most what the
 * redelivery opens, whatever the number of matches.
 */
async function countInSql(knex: Knex, filter: WebhookFilter, { limit, atRest, allowExpiredLinks = false, now = () => new Date() }: PreviewOptions) {
  const key = bulkRedeliveryKey(filter);
  const at = allowExpiredLinks ? null : now();
  // A deployment in clear has no sealed body to open; only the redelivery's checkSignedLinks would fail on one.
  const sealed = at && atRest.keys.length ? { opened: new Set<string>(), expired: new Set<string>() } : null;
  for (let window = limit + 1; ; ) {
    const told = sealed && { opened: [...sealed.opened], expired: [...sealed.expired] };
    const count = await countRedelivery(knex, { filter, key, limit, at: at && at.toISOString(), sealed: told, window });
    if (sealed && at && count.unopened.length) {
      await openSealedOriginals(knex, atRest, count.unopened, at, sealed);
      continue;
    }
    const { would_start, skipped_expired_links, skipped_payload_removed, more } = count;
    if (count.exhausted || (count.reached && more)) return { would_start, skipped_expired_links, skipped_payload_removed, more };
    window *= 2;
  }
}

/** Opens the sealed bodies of `ids`, as the redelivery's checkSignedLinks does, and notes which have dead links. */
async function openSealedOriginals(knex: Knex, atRest: PreviewOptions['atRest'], ids: readonly string[], at: Date, sealed: { opened: Set<string>; expired: Set<string> }) {
  for (const row of await findOriginals(knex, ids)) {
    const original = asStoredWebhook(row, atRest);
    if (signedLinkDeadlines(storedEvent(original), original.acceptedAt).some(({ expiresAt }) => at > expiresAt)) sealed.expired.add(original.webhookId);
  }
  // One that vanished meanwhile (purged, erased) is not asked for again.
  for (const id of ids) sealed.opened.add(id);
}
