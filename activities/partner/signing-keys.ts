import type { Knex } from 'knex';
import { dataAtRest } from '../../lib/at-rest';
import type { Config } from '../../lib/config';
import type { Logger } from '../../lib/logger';
import { signingKeysNow, touchSigningSecrets, type SigningKeys } from '../../store/partner/signing-secrets';

// The keys the worker signs each POST with (docs/partners.md, "Signing secrets"): every live secret, read from
// PostgreSQL at most every FRESH_FOR_MS, so a rotation or a delete is seen within seconds and a POST costs no
// query. The secrets stay in this process's memory: never in an activity's input or result, nor in a log line.

/** How long one read of the secrets serves every POST. */
export const FRESH_FOR_MS = 3_000;
/** How often one worker notes that a secret signed (`last_used_at`): a write a minute per secret at most. */
const TOUCH_EVERY_MS = 60_000;

export function createSigningKeys({
  config,
  knex,
  logger,
}: {
  readonly config: () => Config;
  readonly knex: Knex;
  readonly logger: Logger;
}) {
  let cached: (SigningKeys & { readonly readAt: number }) | undefined;
  let reading: Promise<SigningKeys> | undefined;
  const touchedAt = new Map<string, number>();
  /** The ids last reported unreadable, so one state is logged once. */
  let unreadableSaid = '';

  async function refresh(): Promise<void> {
    const current = config();
    reading ??= signingKeysNow(knex, current, dataAtRest(current)).finally(() => (reading = undefined));
    try {
      cached = { ...(await reading), readAt: Date.now() };
    } catch (error) {
      // PostgreSQL answered the attempt's claim a moment ago: a failed read keeps the last keys for a while.
      if (!cached) throw error;
      logger.warn({ err: error }, 'could not read the signing secrets: signing with those read last');
      return;
    }
    const unreadable = cached.unreadable.map(({ id }) => id).join(' ');
    if (unreadable && unreadable !== unreadableSaid) {
      logger.warn(
        { signingSecrets: cached.unreadable },
        'signing secrets that PAYLOAD_ENCRYPTION_KEYS cannot open do not sign: list their key again',
      );
    }
    unreadableSaid = unreadable;
  }

  /** Notes the API secrets' use, at most once a TOUCH_EVERY_MS each; never delays the POST. */
  function touch(ids: readonly string[]): void {
    const now = Date.now();
    const due = ids.filter((id) => now - (touchedAt.get(id) ?? 0) >= TOUCH_EVERY_MS);
    if (!due.length) return;
    for (const id of due) touchedAt.set(id, now);
    touchSigningSecrets(knex, due).catch((error: unknown) =>
      logger.warn({ err: error }, 'could not note when the signing secrets were last used'),
    );
  }

  /** The keys of every live secret, for one POST. */
  return async function signingKeys(): Promise<readonly Buffer[]> {
    if (!cached || Date.now() - cached.readAt >= FRESH_FOR_MS) await refresh();
    touch(cached!.apiIds);
    return cached!.keys;
  };
}
