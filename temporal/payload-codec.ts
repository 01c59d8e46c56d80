import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { METADATA_ENCODING_KEY, type Payload, type PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { PayloadEncryptionKey } from '../lib/config';

/** The `encoding` of a payload this codec encrypted; anything else is passed through by decode. */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
/** Metadata naming the key that encrypted a payload, so a rotation can still decrypt older histories. */
export const KEY_ID_METADATA = 'encryption-key-id';

const ALGORITHM = 'aes-256-gcm';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A payload that cannot be decrypted: unknown key id, truncated data, or a failed authentication tag. */
export class PayloadDecryptionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PayloadDecryptionError';
  }
}

const text = (value: Uint8Array | null | undefined): string | undefined => (value ? Buffer.from(value).toString('utf8') : undefined);

/**
 * AES-256-GCM over the whole serialized payload (metadata too, so the JSON encoding of the original is
 * hidden as well). The wrapped payload's data is IV (12 random bytes), ciphertext, then the 16-byte tag.
 * The first key encrypts; every key decrypts, chosen by the id stored beside the ciphertext.
 */
export class AesGcmPayloadCodec implements PayloadCodec {
  private readonly encryptWith: PayloadEncryptionKey;
  private readonly keys: ReadonlyMap<string, Buffer>;

  constructor(keys: readonly PayloadEncryptionKey[]) {
    if (keys.length === 0) throw new Error('AesGcmPayloadCodec needs at least one key');
    this.encryptWith = keys[0];
    this.keys = new Map(keys.map(({ id, key }) => [id, key]));
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => this.encrypt(payload));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => (text(payload.metadata?.[METADATA_ENCODING_KEY]) === ENCRYPTED_ENCODING ? this.decrypt(payload) : payload));
  }

  private encrypt(payload: Payload): Payload {
    const { id, key } = this.encryptWith;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv(ALGORITHM, key, iv);
    const plain = temporal.api.common.v1.Payload.encode(payload).finish();
    const data = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
    return {
      metadata: { [METADATA_ENCODING_KEY]: Buffer.from(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: Buffer.from(id) },
      data,
    };
  }

  private decrypt(payload: Payload): Payload {
    const id = text(payload.metadata?.[KEY_ID_METADATA]);
    if (id === undefined) throw new PayloadDecryptionError(`Cannot decrypt a payload: it has no ${KEY_ID_METADATA} metadata`);
    const key = this.keys.get(id);
    if (!key) {
      throw new PayloadDecryptionError(`Cannot decrypt a payload: its encryption key id "${id}" is not in PAYLOAD_ENCRYPTION_KEYS (ids: ${[...this.keys.keys()].join(', ')})`);
    }
    const data = Buffer.from(payload.data ?? []);
    if (data.length < IV_BYTES + TAG_BYTES) throw new PayloadDecryptionError(`Cannot decrypt a payload with key "${id}": its data is too short`);
    const decipher = createDecipheriv(ALGORITHM, key, data.subarray(0, IV_BYTES));
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    let plain: Buffer;
    try {
      plain = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
    } catch {
      throw new PayloadDecryptionError(`Cannot decrypt a payload with key "${id}": authentication failed (the data was altered, or the key under this id changed)`);
    }
    return temporal.api.common.v1.Payload.decode(plain);
  }
}
