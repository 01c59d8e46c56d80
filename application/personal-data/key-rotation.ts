import type { Knex } from 'knex';
import { withAdvisoryLock } from '../../db/advisory-lock';
import {
  boundKeyId,
  bodyBinding,
  dataAtRest,
  excerptBinding,
  openText,
  sealText,
  storedBodyBinding,
  storedKeyForm,
  type DataAtRest,
  type StoredText,
} from '../../lib/at-rest';
import type { Config } from '../../lib/config';
import { countRestingTexts } from '../../store/personal-data/sealed-keys';
import {
  lockBodiesToReseal,
  lockExcerptsToReseal,
  lockLaneKeysToReseal,
  lockSigningSecretsToReseal,
  writeResealedBodies,
  writeResealedExcerpts,
  writeResealedLaneKeys,
  writeResealedSigningSecrets,
  type LaneKeyToReseal,
  type SigningSecretToReseal,
  type ResealCursor,
  type Resealed,
  type ResealRow,
} from '../../store/personal-data/reseal';
import { laneKeyBinding } from '../../store/ordering/lanes';
import { signingSecretBinding } from '../../store/partner/signing-secrets';
import { auditedCall, type OperatorContext } from '../access/audit';
import { namedCounts, restCount } from './at-rest-report';
import { InvalidRequestError, StoredTextDecryptionError } from '../../lib/errors';

// `partner-service keys status` and `keys reseal` (docs/personal-data.md, "Key rotation runbook"): how bodies,
// excerpts, ordering lane keys and the partner's signing secrets rest, by key and format, and their re-encryption
// under the newest key in the current format.

const LOCK_NAME = 'partner-service keys reseal';
export const DEFAULT_RESEAL_BATCH = 500;

/** The stored key id every text has once resealed; a InvalidRequestError without keys. */
function resealTarget(atRest: DataAtRest): { readonly keyId: string; readonly stored: string } {
  const [newest] = atRest.keys;
  if (!newest) throw new InvalidRequestError('PAYLOAD_ENCRYPTION_KEYS is not set: there is no key to seal under');
  return { keyId: newest.id, stored: boundKeyId(newest.id) };
}

/**
 * How bodies, excerpts and ordering lane keys rest: by key id and format (`v3`: derived key and own-row binding;
 * `v2`: a redelivery's body bound to its original; `legacy`; `clear`), what rests under keys no longer listed (by
 * name), and what a reseal has to do.
 */
export async function keysStatus(knex: Knex, config: Config) {
  const atRest = dataAtRest(config);
  const counts = await countRestingTexts(knex);
  const target = atRest.keys[0] ? boundKeyId(atRest.keys[0].id) : null;
  const listed = new Set(atRest.keys.map(({ id }) => id));
  const { bodies, excerpts, laneKeys, signingSecrets } = restCount(
    counts,
    (c) => target !== null && c.storedKeyId !== target,
  );
  return {
    encrypt_with: atRest.keys[0]?.id ?? null,
    listed_key_ids: [...listed],
    stored: counts.map((c) => {
      const form = c.storedKeyId === null ? null : storedKeyForm(c.storedKeyId);
      return {
        kind: c.kind,
        key_id: form?.keyId ?? null,
        format: form ? form.format : 'clear',
        listed: form ? listed.has(form.keyId) : null,
        count: c.count,
      };
    }),
    under_unlisted_keys: namedCounts(
      counts.filter((c) => c.storedKeyId !== null && !listed.has(storedKeyForm(c.storedKeyId).keyId)),
    ),
    to_reseal: { bodies, excerpts, lane_keys: laneKeys, signing_secrets: signingSecrets },
  };
}

/** Progress of a reseal, after each batch. */
export interface ResealProgress {
  readonly bodies: number;
  readonly excerpts: number;
  readonly lane_keys: number;
  readonly signing_secrets: number;
  /** Sealed under a key no longer listed, or failing their tag: left as they are, still to do. */
  readonly unreadable: number;
  readonly batches: number;
}

export interface ResealOptions {
  readonly batchSize: number;
  readonly onBatch?: (progress: ResealProgress) => void;
}

/** A text sealed again: its row, and its new ciphertext. */
type Sealed<Row> = { readonly row: Row; readonly sealed: Buffer };

/** One table a reseal goes through: a batch locked after a cursor, each row's binding, the batch written back. */
interface ResealTable<Row extends { readonly stored: StoredText }, Cursor> {
  readonly lock: (trx: Knex.Transaction, target: string, after: Cursor | null, limit: number) => Promise<Row[]>;
  /**
   * The binding it was sealed with, and the one it is sealed with now (a v2 redelivery's body: its original's, then its
   * own).
   */
  readonly sealedWith: (row: Row) => string;
  readonly binding: (row: Row) => string;
  readonly cursor: (row: Row) => Cursor;
  readonly write: (trx: Knex.Transaction, keyId: string, resealed: ReadonlyArray<Sealed<Row>>) => Promise<void>;
}

/** A resealed text keyed by its row's id, as its table's writer takes it. */
const ownRow = ({ row, sealed }: Sealed<{ readonly id: string }>) => ({ id: row.id, sealed });

const asResealed = (done: ReadonlyArray<Sealed<ResealRow>>): Resealed[] =>
  done.map(({ row, sealed }) => ({ webhookId: row.webhookId, attempt: row.attempt, sealed }));

const BODIES: ResealTable<ResealRow, ResealCursor> = {
  lock: lockBodiesToReseal,
  sealedWith: (row) => storedBodyBinding(row.webhookId, row.redeliveryOf ?? null, row.stored.keyId),
  binding: (row) => bodyBinding(row.webhookId),
  cursor: (row) => ({ webhookId: row.webhookId, attempt: 0 }),
  write: (trx, keyId, done) => writeResealedBodies(trx, keyId, asResealed(done)),
};

const EXCERPTS: ResealTable<ResealRow, ResealCursor> = {
  lock: lockExcerptsToReseal,
  sealedWith: (row) => excerptBinding(row.webhookId, row.attempt!),
  binding: (row) => excerptBinding(row.webhookId, row.attempt!),
  cursor: (row) => ({ webhookId: row.webhookId, attempt: row.attempt! }),
  write: (trx, keyId, done) => writeResealedExcerpts(trx, keyId, asResealed(done)),
};

/** Ordering lanes' keys, bound to their lane's digest (store/ordering/lanes.ts). */
const LANE_KEYS: ResealTable<LaneKeyToReseal, string> = {
  lock: lockLaneKeysToReseal,
  sealedWith: (row) => laneKeyBinding(row.digest),
  binding: (row) => laneKeyBinding(row.digest),
  cursor: (row) => row.laneId,
  write: (trx, keyId, done) =>
    writeResealedLaneKeys(
      trx,
      keyId,
      done.map(({ row, sealed }) => ({ laneId: row.laneId, sealed })),
    ),
};

/** The partner's signing secrets, each bound to its own row (store/partner/signing-secrets.ts). */
const SIGNING_SECRETS: ResealTable<SigningSecretToReseal, string> = {
  lock: lockSigningSecretsToReseal,
  sealedWith: ({ id }) => signingSecretBinding(id),
  binding: ({ id }) => signingSecretBinding(id),
  cursor: ({ id }) => id,
  write: (trx, keyId, done) => writeResealedSigningSecrets(trx, keyId, done.map(ownRow)),
};

/** Opens and seals one batch's texts again; those no listed key opens are counted and left. */
function resealBatch<Row extends { readonly stored: StoredText }, Cursor>(
  atRest: DataAtRest,
  table: ResealTable<Row, Cursor>,
  rows: readonly Row[],
) {
  const resealed: Array<Sealed<Row>> = [];
  let unreadable = 0;
  for (const row of rows) {
    try {
      const text = openText(atRest, row.stored, table.sealedWith(row))!;
      resealed.push({ row, sealed: sealText(atRest, text, table.binding(row)).sealed! });
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
async function resealTable<Row extends { readonly stored: StoredText }, Cursor>(
  knex: Knex,
  atRest: DataAtRest,
  target: string,
  table: ResealTable<Row, Cursor>,
  options: ResealOptions,
  add: (done: number, unreadable: number) => ResealProgress,
) {
  for (let pass = 1, resealedInPass = 1; pass <= MAX_PASSES && resealedInPass > 0; pass++) {
    resealedInPass = 0;
    for (let after: Cursor | null = null; ;) {
      const { rows, progress } = await knex.transaction(async (trx) => {
        const batch = await table.lock(trx, target, after, options.batchSize);
        const { resealed, unreadable } = resealBatch(atRest, table, batch);
        await table.write(trx, target, resealed);
        resealedInPass += resealed.length;
        // A row no listed key opens is met again by every pass: counted once.
        return { rows: batch, progress: add(resealed.length, pass === 1 ? unreadable : 0) };
      });
      if (!rows.length) break;
      options.onBatch?.(progress);
      after = table.cursor(rows[rows.length - 1]);
      if (rows.length < options.batchSize) break;
    }
  }
}

/**
 * Seals every body, excerpt, ordering lane key and signing secret not yet under the newest key in the current format
 * (legacy format, an older key, or in clear) under it, bound to its row (a lane key to its lane's digest). One run at a
 * time (an advisory lock); audited as `keys.reseal`.
 */
export async function resealAll(
  knex: Knex,
  config: Config,
  who: OperatorContext,
  options: ResealOptions,
): Promise<ResealProgress & { readonly key_id: string }> {
  const atRest = dataAtRest(config);
  // A refusal (no key) is a failed row too: the intent names the key there is, or none.
  return auditedCall(
    knex,
    who,
    { action: 'keys.reseal', target: atRest.keys[0]?.id ?? null, parameters: { batch_size: options.batchSize } },
    async () => {
      const target = resealTarget(atRest);
      const ran = await withAdvisoryLock(knex, LOCK_NAME, async () => {
        let state: ResealProgress = {
          bodies: 0,
          excerpts: 0,
          lane_keys: 0,
          signing_secrets: 0,
          unreadable: 0,
          batches: 0,
        };
        const adder =
          (kind: 'bodies' | 'excerpts' | 'lane_keys' | 'signing_secrets') => (done: number, unreadable: number) =>
            (state = {
              ...state,
              [kind]: state[kind] + done,
              unreadable: state.unreadable + unreadable,
              batches: state.batches + 1,
            });
        await resealTable(knex, atRest, target.stored, BODIES, options, adder('bodies'));
        await resealTable(knex, atRest, target.stored, EXCERPTS, options, adder('excerpts'));
        await resealTable(knex, atRest, target.stored, LANE_KEYS, options, adder('lane_keys'));
        await resealTable(knex, atRest, target.stored, SIGNING_SECRETS, options, adder('signing_secrets'));
        return state;
      });
      if (ran.busy) throw new InvalidRequestError('another reseal is running');
      return { key_id: target.keyId, ...ran.result };
    },
  );
}

/** What a reseal would do, without doing it: the counts still to reseal. */
export async function resealDryRun(knex: Knex, config: Config) {
  const target = resealTarget(dataAtRest(config));
  const status = await keysStatus(knex, config);
  return { key_id: target.keyId, dry_run: true, ...status.to_reseal };
}
