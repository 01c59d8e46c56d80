import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

// AES-256-GCM as the service uses it everywhere (Temporal payloads, bodies and excerpts at rest): a fresh
// 12-byte IV, then the ciphertext, then the 16-byte authentication tag, in one buffer. `aad`, when given, is
// authenticated, not stored: the same bytes must be given to open it (a row's id binds its text to the row).

const ALGORITHM = 'aes-256-gcm';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** Why sealed bytes did not open: too short to hold an IV and a tag, or a failed authentication tag. */
export class AesGcmOpenError extends Error {
  constructor(readonly reason: 'too-short' | 'authentication') {
    super(
      reason === 'too-short'
        ? 'its data is too short'
        : 'authentication failed (the data was altered, or the key under this id changed)',
    );
    this.name = 'AesGcmOpenError';
  }
}

export function sealBytes(key: Buffer, plain: Uint8Array, aad?: Buffer): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv(ALGORITHM, key, iv);
  if (aad) cipher.setAAD(aad);
  return Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
}

export function openBytes(key: Buffer, sealed: Uint8Array, aad?: Buffer): Buffer {
  const data = Buffer.from(sealed);
  if (data.length < IV_BYTES + TAG_BYTES) throw new AesGcmOpenError('too-short');
  const decipher = createDecipheriv(ALGORITHM, key, data.subarray(0, IV_BYTES));
  decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
  if (aad) decipher.setAAD(aad);
  try {
    return Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
  } catch {
    throw new AesGcmOpenError('authentication');
  }
}
