import { createHash } from 'node:crypto';
import { AesGcmOpenError, openBytes, sealBytes } from './aes-gcm';
import type { Config, PayloadEncryptionKey } from './config';
import type { SubjectIndexKey } from './subject-index';

// How personal data rests in PostgreSQL: a webhook's body and a partner's response excerpt are sealed with
// PAYLOAD_ENCRYPTION_KEYS (the keys of Temporal's payload codec: the first encrypts, every listed key decrypts),
// or kept in clear without keys; the subject index hashes under SUBJECT_INDEX_KEYS (lib/subject-index.ts).

/**
 * The subject index's key of `partner-service start`'s development mode: public, so an index made with it
 * protects nothing, and the start says so. Fixed, so a later setting of the variable is a deliberate change.
 */
export const DEVELOPMENT_SUBJECT_INDEX_KEY = createHash('sha256').update('partner-integration-service development subject index key').digest();

/** The development key as a listed key: `partner-service start` registers it for a deployment with no key of its own. */
export const DEVELOPMENT_INDEX_KEY: SubjectIndexKey = { id: 'development', key: DEVELOPMENT_SUBJECT_INDEX_KEY };

export interface DataAtRest {
  /** Empty: bodies and excerpts are stored in clear. */
  readonly keys: readonly PayloadEncryptionKey[];
  /**
   * SUBJECT_INDEX_KEYS (or SUBJECT_INDEX_KEY as `default`), newest first; empty when neither is set. Which of
   * them a process may use is the deployment's to say (application/subject-index-keys.ts).
   */
  readonly subjectKeys: readonly SubjectIndexKey[];
}

type AtRestSettings = Pick<Config, 'PAYLOAD_ENCRYPTION_KEYS' | 'SUBJECT_INDEX_KEYS' | 'SUBJECT_INDEX_KEY'>;
const built = new WeakMap<AtRestSettings, DataAtRest>();

/** The at-rest settings of a configuration; one value per configuration object, since the worker reads it per attempt. */
export function dataAtRest(config: AtRestSettings): DataAtRest {
  let atRest = built.get(config);
  if (!atRest) {
    atRest = {
      keys: config.PAYLOAD_ENCRYPTION_KEYS ?? [],
      subjectKeys: config.SUBJECT_INDEX_KEYS ?? (config.SUBJECT_INDEX_KEY ? [{ id: 'default', key: config.SUBJECT_INDEX_KEY }] : []),
    };
    built.set(config, atRest);
  }
  return atRest;
}

/** A text as a row holds it: in clear, or sealed with the id of its key beside it; all null when there is none. */
export interface StoredText {
  readonly clear: string | null;
  readonly sealed: Buffer | null;
  readonly keyId: string | null;
}

const NOTHING: StoredText = { clear: null, sealed: null, keyId: null };

/** Seals a text with the first key, or keeps it in clear when no key is set. */
export function sealText(atRest: DataAtRest, text: string | null): StoredText {
  if (text === null) return NOTHING;
  const [first] = atRest.keys;
  if (!first) return { clear: text, sealed: null, keyId: null };
  return { clear: null, sealed: sealBytes(first.key, Buffer.from(text, 'utf8')), keyId: first.id };
}

/** A stored text that cannot be opened: its key is no longer listed, or the ciphertext fails its tag. */
export class StoredTextDecryptionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StoredTextDecryptionError';
  }
}

/** The text of a stored value, whichever way it was stored; null when there is none. */
export function openText(atRest: DataAtRest, stored: StoredText): string | null {
  if (stored.sealed === null) return stored.clear;
  const key = atRest.keys.find(({ id }) => id === stored.keyId);
  if (!key) {
    throw new StoredTextDecryptionError(`a webhook body or response excerpt is sealed with key id "${stored.keyId}", which PAYLOAD_ENCRYPTION_KEYS no longer lists: list that key again to read it`);
  }
  try {
    return openBytes(key.key, stored.sealed).toString('utf8');
  } catch (error) {
    if (!(error instanceof AesGcmOpenError)) throw error;
    throw new StoredTextDecryptionError(`a webhook body or response excerpt sealed with key "${stored.keyId}" does not open: ${error.message}`);
  }
}
