import { createHash } from 'node:crypto';
import { AesGcmOpenError, openBytes, sealBytes } from './aes-gcm';
import type { Config, PayloadEncryptionKey } from './config';
import type { SubjectIndexKey } from './subject-index';
import { purposeKey } from './key-derivation';
import { StoredTextDecryptionError } from './errors';

// How personal data rests in PostgreSQL: a webhook's body and a partner's response excerpt are sealed with
// PAYLOAD_ENCRYPTION_KEYS (the keys of Temporal's payload codec: the first encrypts, every listed key decrypts),
// or kept in clear without keys; the subject index hashes under SUBJECT_INDEX_KEYS (lib/subject-index.ts).

/**
 * The subject index's key of `partner-service start`'s development mode: public, so an index made with it
 * protects nothing, and the start says so. Fixed, so a later setting of the variable is a deliberate change.
 */
export const DEVELOPMENT_SUBJECT_INDEX_KEY = createHash('sha256')
  .update('partner-integration-service development subject index key')
  .digest();

/**
 * The development key as a listed key: `partner-service start` registers it for a deployment with no key of its own.
 */
export const DEVELOPMENT_INDEX_KEY: SubjectIndexKey = { id: 'development', key: DEVELOPMENT_SUBJECT_INDEX_KEY };

export interface DataAtRest {
  /** Empty: bodies and excerpts are stored in clear. */
  readonly keys: readonly PayloadEncryptionKey[];
  /**
   * SUBJECT_INDEX_KEYS (or SUBJECT_INDEX_KEY as `default`), newest first; empty when neither is set. Which of
   * them a process may use is the deployment's to say (store/personal-data/subject-index-keys.ts).
   */
  readonly subjectKeys: readonly SubjectIndexKey[];
}

type AtRestSettings = Pick<Config, 'PAYLOAD_ENCRYPTION_KEYS' | 'SUBJECT_INDEX_KEYS' | 'SUBJECT_INDEX_KEY'>;
const built = new WeakMap<AtRestSettings, DataAtRest>();

/**
 * The at-rest settings of a configuration; one value per configuration object, since the worker reads it per attempt.
 */
export function dataAtRest(config: AtRestSettings): DataAtRest {
  let atRest = built.get(config);
  if (!atRest) {
    atRest = {
      keys: config.PAYLOAD_ENCRYPTION_KEYS ?? [],
      subjectKeys:
        config.SUBJECT_INDEX_KEYS ??
        (config.SUBJECT_INDEX_KEY ? [{ id: 'default', key: config.SUBJECT_INDEX_KEY }] : []),
    };
    built.set(config, atRest);
  }
  return atRest;
}

/** A text as a row holds it: in clear, or sealed with the id of its key beside it; all null when there is none. */
export interface StoredText {
  readonly clear: string | null;
  readonly sealed: Buffer | null;
  /** The stored key id: `v2:<id>` (current format) or `<id>` (legacy); see `storedKeyForm`. */
  readonly keyId: string | null;
}

const NOTHING: StoredText = { clear: null, sealed: null, keyId: null };

/**
 * The current format's mark in a stored key id: sealed under the key derived for PostgreSQL rows (HKDF), with
 * the row's own identity as associated data. `v2:` is the same but for a redelivery's body, which v2 bound to its
 * original (`redelivery_of`, a column a writer can change); v3 binds every body to its own row. A stored id
 * without a mark is the legacy format: the raw key, no binding. Configured ids cannot hold a colon, so the forms
 * never meet.
 */
const CURRENT_FORMAT = 'v3';
const BOUND_FORMATS = ['v3', 'v2'] as const;
export type StoredFormat = (typeof BOUND_FORMATS)[number] | 'legacy';

/** The stored key id that text sealed now under `keyId` carries. */
export const boundKeyId = (keyId: string): string => `${CURRENT_FORMAT}:${keyId}`;

/** A stored key id read: the configured key's id, its format, and whether that format binds the text to its row. */
export function storedKeyForm(stored: string): {
  readonly keyId: string;
  readonly bound: boolean;
  readonly format: StoredFormat;
} {
  const format = BOUND_FORMATS.find((f) => stored.startsWith(`${f}:`));
  return format
    ? { keyId: stored.slice(format.length + 1), bound: true, format }
    : { keyId: stored, bound: false, format: 'legacy' };
}

/**
 * What a sealed text belongs to, authenticated as its associated data: a body to its own webhook row, an excerpt
 * to its webhook and attempt. A ciphertext copied to another row, or from one column to the other, does not open;
 * nor does a redelivery's body whose `redelivery_of` a writer changed, since the body names its own row only.
 */
export const bodyBinding = (webhookId: string): string => `webhook_events.body_sealed:${webhookId}`;
export const excerptBinding = (webhookId: string, attempt: number): string =>
  `webhook_attempts.response_body_sealed:${webhookId}:${attempt}`;

/**
 * The binding a stored body was sealed with: its own row's, except a body in format v2 of a redelivery, which was
 * sealed for its original (`redeliveryOf`) and opens so only until `keys reseal` rewrites it in v3.
 */
export function storedBodyBinding(webhookId: string, redeliveryOf: string | null, storedKeyId: string | null): string {
  const v2Redelivery = storedKeyId !== null && storedKeyForm(storedKeyId).format === 'v2' && redeliveryOf !== null;
  return bodyBinding(v2Redelivery ? redeliveryOf : webhookId);
}

/** What a text is, as a decryption error names it: bodies and excerpts unless said. */
const BODY_OR_EXCERPT = 'a webhook body or response excerpt';

/** Seals a text with the first key, bound to its row, or keeps it in clear when no key is set. */
export function sealText(atRest: DataAtRest, text: string | null, binding: string): StoredText {
  if (text === null) return NOTHING;
  const [first] = atRest.keys;
  if (!first) return { clear: text, sealed: null, keyId: null };
  const sealed = sealBytes(
    purposeKey(first.key, 'postgresRows'),
    Buffer.from(text, 'utf8'),
    Buffer.from(binding, 'utf8'),
  );
  return { clear: null, sealed, keyId: boundKeyId(first.id) };
}

/**
 * The text of a stored value, whichever way it was stored; null when there is none. `binding`: its row's; `what`: the
 * text, as an error names it.
 */
export function openText(
  atRest: DataAtRest,
  stored: StoredText,
  binding: string,
  what = BODY_OR_EXCERPT,
): string | null {
  if (stored.sealed === null) return stored.clear;
  const { keyId, bound } = storedKeyForm(stored.keyId ?? '');
  const key = atRest.keys.find(({ id }) => id === keyId);
  if (!key) {
    throw new StoredTextDecryptionError(
      `${what} is sealed with key id "${keyId}", which PAYLOAD_ENCRYPTION_KEYS no longer lists: list that key ` +
        `again to read it`,
    );
  }
  try {
    // The legacy format (before v2): the raw key, no binding; readable until `keys reseal` rewrites it.
    const opened = bound
      ? openBytes(purposeKey(key.key, 'postgresRows'), stored.sealed, Buffer.from(binding, 'utf8'))
      : openBytes(key.key, stored.sealed);
    return opened.toString('utf8');
  } catch (error) {
    if (!(error instanceof AesGcmOpenError)) throw error;
    const reason =
      bound && error.reason === 'authentication'
        ? 'it belongs to another row, or it was altered (or the key under this id changed)'
        : error.message;
    throw new StoredTextDecryptionError(`${what} sealed with key "${keyId}" does not open: ${reason}`);
  }
}
