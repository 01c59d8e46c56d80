import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A new high-entropy app key (256 bits), shown to its owner once and never stored. */
export function generateAppKey(): string {
  return `pk_${randomBytes(32).toString('base64url')}`;
}

export interface HashedAppKey {
  readonly salt: Buffer;
  readonly hash: Buffer;
}

/**
 * Salted SHA-256. Keys issued here carry 256 bits of entropy, so a slow password hash would add request
 * latency without adding safety; imported keys must be at least 16 characters (docs/decisions.md, "Schema").
 */
export function hashAppKey(key: string, salt: Buffer = randomBytes(16)): HashedAppKey {
  return { salt, hash: createHash('sha256').update(salt).update(key, 'utf8').digest() };
}

/** Constant-time comparison of a presented key against its stored hash. */
export function verifyAppKey(key: string, stored: HashedAppKey): boolean {
  const { hash } = hashAppKey(key, stored.salt);
  return hash.length === stored.hash.length && timingSafeEqual(hash, stored.hash);
}
