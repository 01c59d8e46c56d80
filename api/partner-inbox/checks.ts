import { timingSafeEqual } from 'node:crypto';
import { webhookSignature } from '../../events/webhook-signature';
import type { AuthorizationCheck, SignatureCheck } from './delivery-ring';

/** Constant-time equality of two byte strings (false at once on a length difference, which is not secret). */
const sameBytes = (a: Buffer, b: Buffer): boolean => a.length === b.length && timingSafeEqual(a, b);

/** `valid` only for exactly `Bearer <token>`, the header every delivery carries (spec 4.1). */
export function checkAuthorization(header: string | undefined, token: string): AuthorizationCheck {
  if (header === undefined) return 'missing';
  return sameBytes(Buffer.from(header), Buffer.from(`Bearer ${token}`)) ? 'valid' : 'invalid';
}

export interface SignedParts {
  readonly webhookId: string | undefined;
  readonly timestamp: string | undefined;
  readonly signature: string | undefined;
}

/**
 * Verifies a Standard Webhooks `webhook-signature` header as a partner would: any `v1,` entry that equals the
 * HMAC of `{webhook-id}.{webhook-timestamp}.{body}` under any of `secrets` (two during a rotation). The
 * timestamp's age is not checked: the inbox shows what arrived, it does not defend against replays.
 */
export function checkSignature(
  secrets: readonly Buffer[],
  { webhookId, timestamp, signature }: SignedParts,
  body: string,
): SignatureCheck {
  if (signature === undefined) return 'not signed';
  if (webhookId === undefined || timestamp === undefined) return 'invalid';
  const offered = signature
    .split(' ')
    .filter((entry) => entry.startsWith('v1,'))
    .map((entry) => Buffer.from(entry.slice('v1,'.length), 'base64'));
  // webhookSignature is the signing side's own function, so the two cannot drift apart.
  const expected = secrets.map((secret) =>
    Buffer.from(webhookSignature([secret], webhookId, timestamp, body).slice('v1,'.length), 'base64'),
  );
  return offered.some((candidate) => expected.some((digest) => sameBytes(candidate, digest))) ? 'valid' : 'invalid';
}

/** The Authorization value as the inbox shows it: the scheme stays, the credential never leaves the request. */
export function maskAuthorization(value: string): string {
  const space = value.indexOf(' ');
  return space > 0 ? `${value.slice(0, space)} ***` : '***';
}
