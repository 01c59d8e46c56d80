import { createHmac } from 'node:crypto';
import type { WebhookEnvelope } from '../events/envelope';

/** What an erasure request names: a candidate's id, or an e-mail address (a candidate's or a request author's). */
export const SUBJECT_KINDS = ['candidate_id', 'email'] as const;
export type SubjectKind = (typeof SUBJECT_KINDS)[number];

/** One subject in the form both ingestion and an erasure hash: ids trimmed, addresses trimmed and lower-cased. */
export function normaliseSubject(kind: SubjectKind, value: string): string {
  const trimmed = value.trim();
  return kind === 'email' ? trimmed.toLowerCase() : trimmed;
}

/**
 * The subject index's key of one subject: HMAC-SHA256 under SUBJECT_INDEX_KEY, in hex. The kind is hashed
 * with the value, so an id that looks like an address never matches one. A leaked index holds no address.
 */
export function subjectKey(secret: Buffer, kind: SubjectKind, value: string): string {
  return createHmac('sha256', secret).update(`${kind}:${normaliseSubject(kind, value)}`).digest('hex');
}

/** The keys of every subject an event's body names: the candidate's id and e-mail, and the request author's. */
export function eventSubjectKeys(secret: Buffer, event: WebhookEnvelope): string[] {
  const candidate = candidateOf(event);
  if (!candidate) return [];
  const subjects: Array<[SubjectKind, unknown]> = [
    ['candidate_id', candidate.id],
    ['email', candidate.email],
    ['email', (candidate.request_author as Record<string, unknown> | undefined)?.email],
  ];
  const keys = subjects
    .filter((subject): subject is [SubjectKind, string] => typeof subject[1] === 'string' && normaliseSubject(subject[0], subject[1]) !== '')
    .map(([kind, value]) => subjectKey(secret, kind, value));
  return [...new Set(keys)];
}

function candidateOf(event: WebhookEnvelope): Record<string, unknown> | undefined {
  const data = event.data as Record<string, unknown> | undefined;
  const candidate = data?.candidate;
  return candidate && typeof candidate === 'object' ? (candidate as Record<string, unknown>) : undefined;
}
