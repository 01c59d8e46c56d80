// The AES-256-GCM payload codec on its own: a round trip through the SDK's own data converter, a key
// rotation, tampering and unknown key ids. The dev-server and codec-server tests use the same codec.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter, METADATA_ENCODING_KEY, type Payload } from '@temporalio/common';
import candidateNew from '../../fixtures/events/candidate-new.json';
import {
  AesGcmPayloadCodec,
  ENCRYPTED_ENCODING,
  KEY_DERIVATION,
  KEY_DERIVATION_METADATA,
  KEY_ID_METADATA,
  PayloadDecryptionError,
} from '../../../temporal/payload-codec';
import { sealBytes } from '../../../lib/aes-gcm';
import { temporal } from '@temporalio/proto';
import { dataConverterFor } from '../../../temporal/settings';
import { loadConfig } from '../../../lib/config';

const newKey = (id: string) => ({ id, key: randomBytes(32) });
const text = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? []).toString('utf8');
const plainPayload = (value: unknown): Payload => defaultPayloadConverter.toPayload(value);

describe('AES-256-GCM payload codec', () => {
  const current = newKey('2025-06');
  const previous = newKey('2025-01');

  it('round trip: an encrypted payload hides the event and decodes to the very same payload', async () => {
    const codec = new AesGcmPayloadCodec([current]);
    const original = plainPayload(candidateNew);
    const [encrypted] = await codec.encode([original]);
    assert.deepEqual(
      Object.keys(encrypted.metadata!).sort(),
      [METADATA_ENCODING_KEY, KEY_ID_METADATA, KEY_DERIVATION_METADATA].sort(),
    );
    assert.equal(text(encrypted.metadata![KEY_DERIVATION_METADATA]), KEY_DERIVATION);
    assert.equal(text(encrypted.metadata![METADATA_ENCODING_KEY]), ENCRYPTED_ENCODING);
    assert.equal(text(encrypted.metadata![KEY_ID_METADATA]), '2025-06');
    for (const secret of ['ada@example.org', '+49 30 1234567', 'json/plain'])
      assert.ok(!Buffer.from(encrypted.data!).includes(secret), secret);
    const [decoded] = await codec.decode([encrypted]);
    assert.deepEqual(defaultPayloadConverter.fromPayload(decoded), candidateNew);
    assert.deepEqual(Object.fromEntries(Object.entries(decoded.metadata!).map(([k, v]) => [k, text(v)])), {
      encoding: 'json/plain',
    });
  });

  it('uses a fresh IV for every payload, so equal events never give equal ciphertexts', async () => {
    const codec = new AesGcmPayloadCodec([current]);
    const [a, b] = await codec.encode([plainPayload(candidateNew), plainPayload(candidateNew)]);
    assert.notDeepEqual(Buffer.from(a.data!), Buffer.from(b.data!));
    assert.notDeepEqual(Buffer.from(a.data!).subarray(0, 12), Buffer.from(b.data!).subarray(0, 12));
  });

  it('works as the data converter of the configuration (encode and decode of several values)', async () => {
    const config = loadConfig({ PAYLOAD_ENCRYPTION_KEYS: `${current.id}:${current.key.toString('base64')}` });
    const { payloadCodecs } = dataConverterFor(config);
    assert.equal(payloadCodecs?.length, 1);
    const payloads = await payloadCodecs[0].encode([plainPayload(candidateNew), plainPayload('second')]);
    const decoded = await payloadCodecs[0].decode(payloads);
    assert.deepEqual(
      decoded.map((p) => defaultPayloadConverter.fromPayload(p)),
      [candidateNew, 'second'],
    );
    assert.deepEqual(dataConverterFor(loadConfig({})), {});
  });

  it('decodes after a key rotation: the new key encrypts, payloads of the old key still decode', async () => {
    const before = new AesGcmPayloadCodec([previous]);
    const [old] = await before.encode([plainPayload({ email: 'ada@example.org' })]);
    const rotated = new AesGcmPayloadCodec([current, previous]);
    const [fresh] = await rotated.encode([plainPayload({ email: 'grace@example.org' })]);
    assert.equal(text(fresh.metadata![KEY_ID_METADATA]), '2025-06');
    const decoded = await rotated.decode([old, fresh]);
    assert.deepEqual(
      decoded.map((p) => defaultPayloadConverter.fromPayload(p)),
      [{ email: 'ada@example.org' }, { email: 'grace@example.org' }],
    );
  });

  it('encrypts under the key derived for Temporal (HKDF), not the raw key; payloads written before, under the raw key and without the marker, still decode', async () => {
    const codec = new AesGcmPayloadCodec([current]);
    const [derived] = await codec.encode([plainPayload({ email: 'ada@example.org' })]);
    // The raw key does not open what the codec writes now: the marker is what chooses the derived key.
    const { [KEY_DERIVATION_METADATA]: _marker, ...withoutMarker } = derived.metadata!;
    const unmarked = { ...derived, metadata: withoutMarker };
    await assert.rejects(codec.decode([unmarked]), /authentication failed/);
    // A payload as the codec wrote it before the derivation: raw key, no marker.
    const legacy: Payload = {
      metadata: {
        [METADATA_ENCODING_KEY]: Buffer.from(ENCRYPTED_ENCODING),
        [KEY_ID_METADATA]: Buffer.from(current.id),
      },
      data: sealBytes(
        current.key,
        temporal.api.common.v1.Payload.encode(plainPayload({ email: 'grace@example.org' })).finish(),
      ),
    };
    const decoded = await codec.decode([legacy, derived]);
    assert.deepEqual(
      decoded.map((p) => defaultPayloadConverter.fromPayload(p)),
      [{ email: 'grace@example.org' }, { email: 'ada@example.org' }],
    );
    const unknown = {
      ...derived,
      metadata: { ...derived.metadata, [KEY_DERIVATION_METADATA]: Buffer.from('hkdf-sha512/other') },
    };
    await assert.rejects(codec.decode([unknown]), {
      name: 'PayloadDecryptionError',
      message: 'Cannot decrypt a payload: unknown encryption-key-derivation "hkdf-sha512/other"',
    });
  });

  it('passes payloads that it did not encrypt through decode unchanged', async () => {
    const codec = new AesGcmPayloadCodec([current]);
    const plain = plainPayload({ written: 'before encryption was turned on' });
    assert.deepEqual(await codec.decode([plain]), [plain]);
  });

  it('detects tampering: any flipped byte (IV, ciphertext or tag) fails with a clear error', async () => {
    const codec = new AesGcmPayloadCodec([current]);
    const [encrypted] = await codec.encode([plainPayload(candidateNew)]);
    const length = encrypted.data!.length;
    for (const index of [0, 11, 12, Math.floor(length / 2), length - 17, length - 1]) {
      const data = Buffer.from(encrypted.data!);
      data[index] ^= 0x01;
      await assert.rejects(
        codec.decode([{ ...encrypted, data }]),
        (error: Error) => {
          assert.ok(error instanceof PayloadDecryptionError);
          assert.equal(
            error.message,
            'Cannot decrypt a payload with key "2025-06": authentication failed (the data was altered, or the key under this id changed)',
          );
          return true;
        },
        `byte ${index}`,
      );
    }
    await assert.rejects(
      codec.decode([{ ...encrypted, data: Buffer.from(encrypted.data!).subarray(0, 20) }]),
      /Cannot decrypt a payload with key "2025-06": its data is too short/,
    );
  });

  it('detects a payload encrypted under another key with the same id', async () => {
    const [encrypted] = await new AesGcmPayloadCodec([newKey('2025-06')]).encode([plainPayload('x')]);
    await assert.rejects(new AesGcmPayloadCodec([current]).decode([encrypted]), PayloadDecryptionError);
  });

  it('names an unknown key id, and the ids it has', async () => {
    const [encrypted] = await new AesGcmPayloadCodec([newKey('retired')]).encode([plainPayload('x')]);
    await assert.rejects(
      new AesGcmPayloadCodec([current, previous]).decode([encrypted]),
      (error: Error) =>
        error instanceof PayloadDecryptionError &&
        error.message ===
          'Cannot decrypt a payload: its encryption key id "retired" is not in PAYLOAD_ENCRYPTION_KEYS (ids: 2025-06, 2025-01)',
    );
  });
});
