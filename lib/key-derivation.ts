import { hkdfSync } from 'node:crypto';

// One configured key, several uses: each use gets its own key, derived with HKDF-SHA256 (RFC 5869) under a
// distinct `info`, so a ciphertext of one use can never be opened as another's, and no use holds the raw key.

/** What a derived key is for; the `info` string of each is fixed for ever (changing it loses the data). */
export const KEY_PURPOSES = {
  temporalPayloads: 'partner-integration-service/v1/temporal-payloads',
  postgresRows: 'partner-integration-service/v1/postgres-rows',
} as const;
export type KeyPurpose = keyof typeof KEY_PURPOSES;

const derived = new WeakMap<Buffer, Map<KeyPurpose, Buffer>>();

/** The 32-byte key of `purpose` derived from a configured key; computed once per key object and purpose. */
export function purposeKey(key: Buffer, purpose: KeyPurpose): Buffer {
  let byPurpose = derived.get(key);
  if (!byPurpose) derived.set(key, (byPurpose = new Map()));
  let result = byPurpose.get(purpose);
  if (!result) {
    result = Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), KEY_PURPOSES[purpose], 32));
    byPurpose.set(purpose, result);
  }
  return result;
}
