import type { SignedLinkKind } from '../lib/vocabulary';
import type { WebhookEnvelope } from './envelope';

/** Spec section 8: candidate.files URLs expire 24 hours after issue, file answers 2 hours after. */
export const SIGNED_LINK_LIFETIMES_MS: Readonly<Record<SignedLinkKind, number>> = {
  files: 24 * 60 * 60 * 1000,
  file_answers: 2 * 60 * 60 * 1000,
};

/** One kind of signed link an event carries, and the time after which its links are certainly dead. */
export interface SignedLinkDeadline {
  readonly kind: SignedLinkKind;
  readonly expiresAt: Date;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The kinds of signed link in an event: a non-null member of candidate.files, an answer of answer_type file. */
export function signedLinkKinds(event: WebhookEnvelope): SignedLinkKind[] {
  const candidate = isObject(event.data) ? event.data.candidate : undefined;
  if (!isObject(candidate)) return [];
  const kinds: SignedLinkKind[] = [];
  if (isObject(candidate.files) && Object.values(candidate.files).some((url) => typeof url === 'string'))
    kinds.push('files');
  if (
    Array.isArray(candidate.answers) &&
    candidate.answers.some((answer) => isObject(answer) && answer.answer_type === 'file')
  )
    kinds.push('file_answers');
  return kinds;
}

/**
 * The links were signed no later than the service accepted the event, so acceptance plus each lifetime is a
 * deadline after which they are certainly expired (they may expire earlier: the signer's clock is not ours).
 */
export function signedLinkDeadlines(event: WebhookEnvelope, acceptedAt: Date): SignedLinkDeadline[] {
  return signedLinkKinds(event).map((kind) => ({
    kind,
    expiresAt: new Date(acceptedAt.getTime() + SIGNED_LINK_LIFETIMES_MS[kind]),
  }));
}

/** The kinds whose deadline has passed at `at`: their links are dead. */
export function expiredSignedLinks(event: WebhookEnvelope, acceptedAt: Date, at: Date): SignedLinkKind[] {
  return signedLinkDeadlines(event, acceptedAt)
    .filter((deadline) => at.getTime() > deadline.expiresAt.getTime())
    .map((deadline) => deadline.kind);
}
