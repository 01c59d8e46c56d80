import { METADATA_ENCODING_KEY, type Payload, type PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { AesGcmOpenError, openBytes, sealBytes } from '../lib/aes-gcm';
import type { PayloadEncryptionKey } from '../lib/config';
import { purposeKey } from '../lib/key-derivation';

/** The `encoding` of a payload this codec encrypted; anything else is passed through by decode. */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
/** Metadata naming the key that encrypted a payload, so a rotation can still decrypt older histories. */
export const KEY_ID_METADATA = 'encryption-key-id';
/**
 * Metadata saying the payload was encrypted under the key derived for Temporal payloads (HKDF, lib/key-derivation.ts).
 * Payloads written before it have none and were encrypted under the raw key: they still decode.
 */
export const KEY_DERIVATION_METADATA = 'encryption-key-derivation';
export const KEY_DERIVATION = 'hkdf-sha256/temporal-payloads/v1';

/** A payload that cannot be decrypted: unknown key id, truncated data, or a failed authentication tag. */
export class PayloadDecryptionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PayloadDecryptionError';
  }
}

const text = (value: Uint8Array | null | undefined): string | undefined =>
  value ? Buffer.from(value).toString('utf8') : undefined;

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
    return payloads.map((payload) =>
      text(payload.metadata?.[METADATA_ENCODING_KEY]) === ENCRYPTED_ENCODING ? this.decrypt(payload) : payload,
    );
  }

  private encrypt(payload: Payload): Payload {
    const { id, key } = this.encryptWith;
    const data = sealBytes(
      purposeKey(key, 'temporalPayloads'),
      temporal.api.common.v1.Payload.encode(payload).finish(),
    );
    return {
      metadata: {
        [METADATA_ENCODING_KEY]: Buffer.from(ENCRYPTED_ENCODING),
        [KEY_ID_METADATA]: Buffer.from(id),
        [KEY_DERIVATION_METADATA]: Buffer.from(KEY_DERIVATION),
      },
      data,
    };
  }

  private decrypt(payload: Payload): Payload {
    const id = text(payload.metadata?.[KEY_ID_METADATA]);
    if (id === undefined)
      throw new PayloadDecryptionError(`Cannot decrypt a payload: it has no ${KEY_ID_METADATA} metadata`);
    const key = this.keys.get(id);
    if (!key) {
      throw new PayloadDecryptionError(
        `Cannot decrypt a payload: its encryption key id "${id}" is not in PAYLOAD_ENCRYPTION_KEYS (ids: ` +
          `${[...this.keys.keys()].join(', ')})`,
      );
    }
    const derivation = text(payload.metadata?.[KEY_DERIVATION_METADATA]);
    if (derivation !== undefined && derivation !== KEY_DERIVATION)
      throw new PayloadDecryptionError(`Cannot decrypt a payload: unknown ${KEY_DERIVATION_METADATA} "${derivation}"`);
    let plain: Buffer;
    try {
      plain = openBytes(derivation ? purposeKey(key, 'temporalPayloads') : key, payload.data ?? new Uint8Array());
    } catch (error) {
      if (!(error instanceof AesGcmOpenError)) throw error;
      throw new PayloadDecryptionError(`Cannot decrypt a payload with key "${id}": ${error.message}`);
    }
    return temporal.api.common.v1.Payload.decode(plain);
  }
}
