import { createHmac } from 'node:crypto';
import { domainToASCII } from 'node:url';
import type { WebhookEnvelope } from '../events/envelope';
import { SubjectIndexKeyError } from './errors';

/** What an erasure request names: a candidate's id, an e-mail address (anywhere in a body), or a phone number. */
export const SUBJECT_KINDS = ['candidate_id', 'email', 'phone'] as const;
export type SubjectKind = (typeof SUBJECT_KINDS)[number];

/** One key of the subject index: its id is stored beside every row and erasure that used it, never the key. */
export interface SubjectIndexKey {
  readonly id: string;
  readonly key: Buffer;
}

// The patterns are also the documented contract (/openapi.json), so they say `\ufeff` beside `\s` and `[0-9]` for
// `\d`: JavaScript counts U+FEFF as whitespace and only ASCII digits as digits, and a client's regex may not.

/**
 * One e-mail address as a whole value: a local part and a domain, no whitespace, one `@`, in any script. Ingestion
 * checks address fields with it, so every address ingestion accepts normalises, and can be erased.
 */
export const EMAIL_ADDRESS_PATTERN = /^[^\s@\ufeff]+@[^\s@\ufeff]+$/u;
/** A phone number: an optional `+`, then at least 6 digits among spaces and `( ) . / -`. */
export const PHONE_NUMBER_PATTERN = /^\+?[ ()./-]*(?:[0-9][ ()./-]*){6,}$/u;
/** Some character that is not whitespace: a candidate id that trims to nothing is none. */
export const NOT_BLANK_PATTERN = /[^\s\ufeff]/u;
/** Addresses inside free text: the characters that end an address in prose or markup are left out. */
const ADDRESS_IN_TEXT = /[^\s@<>()[\]{},;:"'`]+@[^\s@<>()[\]{},;:"'`]+/gu;

/**
 * One subject in the one form that ingestion's index and an erasure request both hash, or undefined when the
 * value is not one of that kind:
 * - a candidate id: trimmed;
 * - an address: NFC, trimmed, lower-cased, its domain in ASCII (punycode) where it is a valid name, so
 *   `Jörg@Müller.de` and `jörg@xn--mller-kva.de` are one address;
 * - a phone number: its digits, with the country code a leading `+` or `00` gives; fewer than 6 digits, or
 *   anything but digits, spaces and `+ - . ( ) /`, makes it no phone number.
 */
export function normaliseSubject(kind: SubjectKind, value: string): string | undefined {
  const trimmed = value.normalize('NFC').trim();
  if (kind === 'candidate_id') return trimmed || undefined;
  if (kind === 'phone') return normalisePhone(trimmed);
  return normaliseAddress(trimmed);
}

function normaliseAddress(value: string): string | undefined {
  const address = value.toLowerCase();
  if (!EMAIL_ADDRESS_PATTERN.test(address)) return undefined;
  const at = address.lastIndexOf('@');
  const domain = address.slice(at + 1);
  const ascii = domainToASCII(domain);
  return `${address.slice(0, at)}@${ascii || domain}`;
}

function normalisePhone(value: string): string | undefined {
  if (!PHONE_NUMBER_PATTERN.test(value)) return undefined;
  return value.replace(/[^0-9]/gu, '').replace(/^00/u, '');
}

/**
 * The subject index's key of one subject under one index key: HMAC-SHA256 of kind and normalised value, in hex.
 * The kind is hashed with the value, so an id that looks like an address never matches one. A leaked index holds
 * no address. Undefined when the value is not a subject of that kind.
 */
export function subjectKey(secret: Buffer, kind: SubjectKind, value: string): string | undefined {
  const normalised = normaliseSubject(kind, value);
  return normalised === undefined
    ? undefined
    : createHmac('sha256', secret).update(`${kind}:${normalised}`).digest('hex');
}

/**
 * The keys of every subject an event's body names: the candidate's id and phone number, and every e-mail address
 * anywhere in the body (the candidate's, the request author's, inside the message, the answers, the custom fields
 * or any other text), each once.
 */
export function eventSubjectKeys(secret: Buffer, event: WebhookEnvelope): string[] {
  const candidate = candidateOf(event);
  const subjects: Array<[SubjectKind, string]> = [];
  if (typeof candidate?.id === 'string') subjects.push(['candidate_id', candidate.id]);
  if (typeof candidate?.phone_number === 'string') subjects.push(['phone', candidate.phone_number]);
  for (const text of textsOf(event.data)) {
    subjects.push(['email', text]);
    // An address that ends a sentence leaves its full stop behind.
    for (const [found] of text.matchAll(ADDRESS_IN_TEXT)) subjects.push(['email', found.replace(/[.!?]+$/u, '')]);
  }
  const keys = subjects
    .map(([kind, value]) => subjectKey(secret, kind, value))
    .filter((key): key is string => key !== undefined);
  return [...new Set(keys)];
}

/** Every string inside a JSON value, keys of objects included (a custom field may be named by an address). */
function* textsOf(value: unknown): Generator<string> {
  if (typeof value === 'string') {
    if (value.includes('@')) yield value;
  } else if (Array.isArray(value)) {
    for (const item of value) yield* textsOf(item);
  } else if (value && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      if (key.includes('@')) yield key;
      yield* textsOf(item);
    }
  }
}

function candidateOf(event: WebhookEnvelope): Record<string, unknown> | undefined {
  const data = event.data as Record<string, unknown> | undefined;
  const candidate = data?.candidate;
  return candidate && typeof candidate === 'object' ? (candidate as Record<string, unknown>) : undefined;
}

/** A key the deployment has indexed under, as `subject_index_keys` records it: a fingerprint, never the key. */
export interface RegisteredIndexKey {
  readonly id: string;
  readonly fingerprint: string;
  readonly retired: boolean;
}

/** The id `partner-service start` indexes under when no key is set (lib/at-rest.ts DEVELOPMENT_INDEX_KEY). */
export const DEVELOPMENT_KEY_ID = 'development';

/** What identifies a key in PostgreSQL without revealing it: an HMAC of a fixed text under the key. */
export const indexKeyFingerprint = (key: SubjectIndexKey): string =>
  createHmac('sha256', key.key)
    .update('partner-integration-service subject index key fingerprint')
    .digest('hex')
    .slice(0, 32);

/** The keys a process indexes and searches with: `writeWith` hashes new rows, an erasure searches under all. */
export interface IndexKeys {
  readonly writeWith: SubjectIndexKey;
  readonly searchUnder: readonly SubjectIndexKey[];
}

/**
 * Which keys this process may use, given the deployment's registered keys: its configured keys must include every
 * key still in use, under the same fingerprints. Without a configured key, only a development deployment (one
 * `partner-service start` registered the public development key for, and nothing else) indexes at all.
 */
export function decideIndexKeys(
  registered: readonly RegisteredIndexKey[],
  configured: readonly SubjectIndexKey[],
  development: SubjectIndexKey,
): IndexKeys {
  const inUse = registered.filter((key) => !key.retired);
  const developmentInUse = inUse.some((key) => key.id === DEVELOPMENT_KEY_ID);
  const others = inUse.filter((key) => key.id !== DEVELOPMENT_KEY_ID).map((key) => key.id);
  if (configured.length === 0) {
    if (developmentInUse && others.length === 0) return { writeWith: development, searchUnder: [development] };
    throw new SubjectIndexKeyError(
      others.length
        ? `SUBJECT_INDEX_KEYS is not set, but this deployment indexes personal data under key ` +
            `${others.join(', ')}: give this process the deployment's SUBJECT_INDEX_KEYS`
        : 'SUBJECT_INDEX_KEYS is not set: set it (docs/personal-data.md#index-keys); only partner-service start ' +
            'indexes with the public development key',
    );
  }
  for (const key of configured) {
    const known = registered.find((r) => r.id === key.id);
    if (known && known.fingerprint !== indexKeyFingerprint(key)) {
      throw new SubjectIndexKeyError(
        `SUBJECT_INDEX_KEYS gives key id ${key.id} another key than the one this deployment indexed under with that id`,
      );
    }
  }
  if (registered.some((key) => key.id === configured[0].id && key.retired)) {
    throw new SubjectIndexKeyError(
      `SUBJECT_INDEX_KEYS lists key ${configured[0].id} first, which a reindex retired: put the deployment's ` +
        `newest key first`,
    );
  }
  const missing = others.filter((id) => !configured.some((key) => key.id === id));
  if (missing.length) {
    throw new SubjectIndexKeyError(
      `this deployment indexes personal data under key ${missing.join(', ')}, which SUBJECT_INDEX_KEYS does not ` +
        `list: keep it listed until partner-service personal-data reindex retires it`,
    );
  }
  return { writeWith: configured[0], searchUnder: developmentInUse ? [...configured, development] : configured };
}
