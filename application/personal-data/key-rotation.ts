import type { Knex } from 'knex';
import { withAdvisoryLock } from '../../db/advisory-lock';
import { boundKeyId, bodyBinding, dataAtRest, excerptBinding, openText, sealText, storedBodyBinding, storedKeyForm, type DataAtRest } from '../../lib/at-rest';
import type { Config } from '../../lib/config';
import { countRestingTexts } from '../../store/personal-data/sealed-keys';
import { lockBodiesToReseal, lockExcerptsToReseal, writeResealedBodies, writeResealedExcerpts, type ResealCursor, type Resealed, type ResealRow } from '../../store/personal-data/reseal';
import { auditedCall, type OperatorContext } from '../access/audit';
import { restCount } from './at-rest-report';
import { InvalidRequestError, StoredTextDecryptionError } from '../../lib/errors';

// `partner-service keys status` and `keys reseal` (docs/personal-data.md, "Key rotation runbook"): how bodies and
// excerpts rest, by key and format, and their re-encryption under the newest key in the current format.

const LOCK_NAME = 'partner-service keys reseal';
export const DEFAULT_RESEAL_BATCH = 500;

/** The stored key id every text has once resealed; a InvalidRequestError without keys. */
function resealTarget(atRest: DataAtRest): { readonly keyId: string; readonly stored: string } {
  const [newest] = atRest.keys;
  if (!newest) throw new InvalidRequestError('PAYLOAD_ENCRYPTION_KEYS is not set: there is no key to seal under');
  return { keyId: newest.id, stored: boundKeyId(newest.id) };
}

/** How bodies and excerpts rest: by key id and format (`v3`: derived key and own-row binding; `v2`; `legacy`; `clear`), and what a reseal has to do. */
export async function keysStatus(knex: Knex, config: Config) {
  const atRest = dataAtRest(config);
  const counts = await countRestingTexts(knex);
  const target = atRest.keys[0] ? boundKeyId(atRest.keys[0].id) : null;
  const listed = new Set(atRest.keys.map(({ id }) => id));
  const { bodies, excerpts } = restCount(counts, (c) => target !== null && c.storedKeyId !== target);
  return {
    encrypt_with: atRest.keys[0]?.id ?? null,
    listed_key_ids: [...listed],
    stored: counts.map((c) => {
      const form = c.storedKeyId === null ? null : storedKeyForm(c.storedKeyId);
      return { kind: c.kind, key_id: form?.keyId ?? null, format: form ? form.format : 'clear', listed: form ? listed.has(form.keyId) : null, count: c.count };
    }),
    to_reseal: { bodies, excerpts },
  };
}

/** Progress of a reseal, after each batch. */
export interface ResealProgress {
  readonly bodies: number;
  readonly excerpts: number;
  /** Sealed under a key no longer listed, or failing their tag: left as they are, still to do. */
  readonly unreadable: number;
  readonly batches: number;
}

export interface ResealOptions {
  readonly batchSize: number;
  readonly onBatch?: (progress: ResealProgress) => void;
}

type Locker = (trx: Knex.Transaction, target: string, after: ResealCursor | null, limit: number) => Promise<ResealRow[]>;
type Writer = (trx: Knex.Transaction, keyId: string, resealed: readonly Resealed[]) => Promise<void>;

/** The binding a text was sealed with (a v2 redelivery's body: its original's), and the one it is sealed with now: its row's own. */
const sealedBindingOf = (row: ResealRow) => (row.attempt === null ? storedBodyBinding(row.webhookId, row.redeliveryOf ?? null, row.stored.keyId) : excerptBinding(row.webhookId, row.attempt));
const bindingOf = (row: ResealRow) => (row.attempt === null ? bodyBinding(row.webhookId) : excerptBinding(row.webhookId, row.attempt));

/** Opens and seals one batch's texts again; those no listed key opens are counted and left. */
function resealBatch(atRest: DataAtRest, rows: readonly ResealRow[]): { resealed: Resealed[]; unreadable: number } {
  const resealed: Resealed[] = [];
  let unreadable = 0;
  for (const row of rows) {
    try {
      const text = openText(atRest, row.stored, sealedBindingOf(row))!;
      resealed.push({ webhookId: row.webhookId, attempt: row.attempt, sealed: sealText(atRest, text, bindingOf(row)).sealed! });
    } catch (error) {
      if (!(error instanceof StoredTextDecryptionError)) throw error;
      unreadable++;
    }
  }
  return { resealed, unreadable };
}

/** Passes over a table at most: a pass skips rows other transactions hold, and the next one takes them. */
const MAX_PASSES = 3;

/**
 * Every text of one table, batch by batch, each batch one short transaction holding only its rows; passes again
 * while the last pass resealed anything (rows skipped because they were held), at most MAX_PASSES.
 */
async function resealTable(knex: Knex, atRest: DataAtRest, target: string, lock: Locker, write: Writer, options: ResealOptions, progress: () => ResealProgress, add: (done: number, unreadable: number) => void) {
  for (let pass = 1, resealedInPass = 1; pass <= MAX_PASSES && resealedInPass > 0; pass++) {
    resealedInPass = 0;
    for (let after: ResealCursor | null = null; ; ) {
      const rows = await knex.transaction(async (trx) => {
        const batch = await lock(trx, target, after, options.batchSize);
        const { resealed, unreadable } = resealBatch(atRest, batch);
        await write(trx, target, resealed);
        // A row no listed key opens is met again by every pass: counted once.
        add(resealed.length, pass === 1 ? unreadable : 0);
        resealedInPass += resealed.length;
        return batch;
      });
      if (!rows.length) break;
      options.onBatch?.(progress());
      const last = rows[rows.length - 1];
      after = { webhookId: last.webhookId, attempt: last.attempt ?? 0 };
      if (rows.length < options.batchSize) break;
    }
  }
}

/**
 * Seals every body and excerpt not yet under the newest key in the current format (legacy format, an older key,
 * or in clear) under it, bound to its row. One run at a time (an advisory lock); audited as `keys.reseal`.
 */
export async function resealAll(knex: Knex, config: Config, who: OperatorContext, options: ResealOptions): Promise<ResealProgress & { readonly key_id: string }> {
  const atRest = dataAtRest(config);
  // A refusal (no key) is a failed row too: the intent names the key there is, or none.
  return auditedCall(knex, who, { action: 'keys.reseal', target: atRest.keys[0]?.id ?? null, parameters: { batch_size: options.batchSize } }, async () => {
    const target = resealTarget(atRest);
    const ran = await withAdvisoryLock(knex, LOCK_NAME, async () => {
      let state: ResealProgress = { bodies: 0, excerpts: 0, unreadable: 0, batches: 0 };
      const progress = () => state;
      const adder = (kind: 'bodies' | 'excerpts') => (done: number, unreadable: number) => {
        state = { ...state, [kind]: state[kind] + done, unreadable: state.unreadable + unreadable, batches: state.batches + 1 };
      };
      await resealTable(knex, atRest, target.stored, lockBodiesToReseal, writeResealedBodies, options, progress, adder('bodies'));
      await resealTable(knex, atRest, target.stored, lockExcerptsToReseal, writeResealedExcerpts, options, progress, adder('excerpts'));
      return state;
    });
    if (ran.busy) throw new InvalidRequestError('another reseal is running');
    return { key_id: target.keyId, ...ran.result };
  });
}

/** What a reseal would do, without doing it: the counts still to reseal. */
export async function resealDryRun(knex: Knex, config: Config) {
  const target = resealTarget(dataAtRest(config));
  const status = await keysStatus(knex, config);
  return { key_id: target.keyId, dry_run: true, ...status.to_reseal };
}
