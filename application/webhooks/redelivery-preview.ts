import type { Knex } from 'knex';
import { auditedChange, type OperatorContext } from '../access/audit';
import { signedLinkDeadlines } from '../../events/signed-links';
import type { WebhookFilter } from '../../store/webhooks/delivery-log';
import { findOriginals, windowOriginals, type WindowOriginal } from '../../store/webhooks/redelivery-preview';
import { asStoredWebhook } from '../../store/webhooks/webhook-rows';
import { storedEvent } from '../ingestion/start-webhook';
import { bulkRedeliveryKey, bulkRedeliveryParameters, type BulkRedeliveryOptions } from './webhook-operations';

// A bulk redelivery's dry run: what the same request would start and skip, counted without a start, a row or a
// call to Temporal. It is audited as the redelivery is, with `dry_run: true`.

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
export function previewRedelivery(
  knex: Knex,
  who: OperatorContext,
  filter: WebhookFilter,
  options: PreviewOptions,
): Promise<BulkRedeliveryPreview> {
  const what = {
    action: 'webhooks.redeliver',
    target: null,
    parameters: { ...bulkRedeliveryParameters(filter, options), dry_run: true },
  } as const;
  return auditedChange(knex, who, what, async (trx) => ({
    dry_run: true,
    ...(await countInSql(trx, filter, options)),
  }));
}

/**
 * The redelivery's walk replayed over the originals of the newest matches (windowOriginals), `limit` + 1 matches at
 * first (the stop and one past it), doubled while the window neither holds every match nor settles the answer
 * (skips pushed the stop past it, or only started originals' other matches follow it). A sealed body is opened
 * only once the walk certainly reaches its original: the next ones up to where `limit` would be reached if each
 * of them started (openReached). So it opens at most what the redelivery opens, however many webhooks match.
 */
async function countInSql(
  knex: Knex,
  filter: WebhookFilter,
  { limit, atRest, allowExpiredLinks = false, now = () => new Date() }: PreviewOptions,
) {
  const key = bulkRedeliveryKey(filter);
  const at = allowExpiredLinks ? null : now();
  // A deployment in clear has no sealed body to open; only the redelivery's checkSignedLinks would fail on one.
  const opensSealed = at !== null && atRest.keys.length > 0;
  /** Sealed originals opened so far: whether their links are dead. */
  const opened = new Map<string, boolean>();
  for (let window = limit + 1; ; window *= 2) {
    const { originals, exhausted } = await windowOriginals(knex, {
      filter,
      key,
      at: at && at.toISOString(),
      opensSealed,
      window,
    });
    const fateOf = (o: WindowOriginal) =>
      o.fate !== 'sealed' ? o.fate : opened.has(o.id) ? (opened.get(o.id) ? 'expired_links' : 'start') : 'sealed';
    const skipped = { expired_links: 0, payload_removed: 0 };
    let started = 0;
    let stop: number | undefined;
    for (let i = 0; i < originals.length && stop === undefined; i++) {
      if (fateOf(originals[i]) === 'sealed')
        await openReached(knex, atRest, at!, originals.slice(i), limit - started, opened);
      const fate = fateOf(originals[i]);
      if (fate === 'start' && ++started === limit) stop = originals[i].first_pos;
      else if (fate === 'expired_links' || fate === 'payload_removed') skipped[fate]++;
    }
    const answer = (more: boolean) => ({
      would_start: started,
      skipped_expired_links: skipped.expired_links,
      skipped_payload_removed: skipped.payload_removed,
      more,
    });
    // The redelivery's last look: a match past the stop whose original it did not start.
    const more =
      stop !== undefined && originals.some((o) => o.last_pos > stop && (o.first_pos > stop || fateOf(o) !== 'start'));
    if (exhausted || more) return answer(more);
  }
}

/**
 * Opens the sealed originals the walk certainly reaches from `ahead[0]` on: those before the `toGo`-th original that
 * could start (a sealed one counted as a start can only bring the stop nearer). One statement for them all.
 */
async function openReached(
  knex: Knex,
  atRest: PreviewOptions['atRest'],
  at: Date,
  ahead: readonly WindowOriginal[],
  toGo: number,
  opened: Map<string, boolean>,
) {
  const reached: string[] = [];
  for (let i = 0, couldStart = 0; i < ahead.length && couldStart < toGo; i++) {
    const { id, fate } = ahead[i];
    if (fate === 'sealed' && !opened.has(id)) reached.push(id);
    if (fate === 'start' || (fate === 'sealed' && opened.get(id) !== true)) couldStart++;
  }
  for (const row of await findOriginals(knex, reached)) {
    const original = asStoredWebhook(row, atRest);
    opened.set(
      original.webhookId,
      signedLinkDeadlines(storedEvent(original), original.acceptedAt).some(({ expiresAt }) => at > expiresAt),
    );
  }
  // One that vanished meanwhile (purged, erased) is not asked for again: counted as a start, as its row was read.
  for (const id of reached) if (!opened.has(id)) opened.set(id, false);
}
