import { METADATA_ENCODING_KEY, type Payload, type PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { AesGcmOpenError, openBytes, sealBytes } from '../lib/aes-gcm';
import type { PayloadEncryptionKey } from '../lib/config';

/** The `encoding` of a payload this codec encrypted; anything else is passed through by decode. */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
/** Metadata naming the key that encrypted a payload, so a rotation can still decrypt older histories. */
export const KEY_ID_METADATA = 'encryption-key-id';

/** A payload that cannot be decrypted: unknown key id, truncated data, or a failed authentication tag. */
export class PayloadDecryptionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PayloadDecryptionError';
  }
}

const text = (value: Uint8Array | null | undefined): string | undefined => (value ? Buffer.from(value).toString('utf8') : undefined);

/**
 * AES-256-GCM (lib/aes-gcm.ts) over the whole serialized payload (metadata too, so the JSON encoding of the
 * original is hidden as well).
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
    const data = sealBytes(key, temporal.api.common.v1.Payload.encode(payload).finish());
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
    let plain: Buffer;
    try {
      plain = openBytes(key, payload.data ?? new Uint8Array());
    } catch (error) {
      if (!(error instanceof AesGcmOpenError)) throw error;
      throw new PayloadDecryptionError(`Cannot decrypt a payload with key "${id}": ${error.message}`);
    }
    return temporal.api.common.v1.Payload.decode(plain);
  }
}
