// lib/at-rest.ts over lib/aes-gcm.ts: how a text is sealed, which key opens it after a rotation, and what a
// text that cannot be opened says (the key id, never the text).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { bodyBinding, dataAtRest, excerptBinding, openText, sealText } from '../../../lib/at-rest';
import { sealBytes } from '../../../lib/aes-gcm';
import { purposeKey } from '../../../lib/key-derivation';
import { loadConfig } from '../../../lib/config';
import { StoredTextDecryptionError } from '../../../lib/errors';

const setting = (...ids: string[]) => ids.map((id) => `${id}:${randomBytes(32).toString('base64')}`);
const TEXT = 'accepted ada@example.org (Example) ✓';
const ROW = bodyBinding('5f0b1c9e-0000-4000-8000-000000000001');
const OTHER_ROW = bodyBinding('5f0b1c9e-0000-4000-8000-000000000002');

describe('data at rest', () => {
  const [a, b] = setting('key-a', 'key-b');
  const underA = dataAtRest(loadConfig({ PAYLOAD_ENCRYPTION_KEYS: a }));
  const underBA = dataAtRest(loadConfig({ PAYLOAD_ENCRYPTION_KEYS: `${b} ${a}` }));
  const underB = dataAtRest(loadConfig({ PAYLOAD_ENCRYPTION_KEYS: b }));

  it('keeps a text in clear without keys, and lists no index key', () => {
    const atRest = dataAtRest(loadConfig({}));
    assert.deepEqual(sealText(atRest, TEXT, ROW), { clear: TEXT, sealed: null, keyId: null });
    assert.deepEqual(atRest.subjectKeys, []);
    assert.equal(openText(atRest, { clear: TEXT, sealed: null, keyId: null }, ROW), TEXT);
    assert.deepEqual(sealText(atRest, null, ROW), { clear: null, sealed: null, keyId: null });
  });

  it('lists SUBJECT_INDEX_KEYS newest first, and SUBJECT_INDEX_KEY as the one key `default`, whatever the payload keys', () => {
    const [key1, key2] = [randomBytes(32), randomBytes(48)];
    const one = dataAtRest(loadConfig({ SUBJECT_INDEX_KEY: key1.toString('base64'), PAYLOAD_ENCRYPTION_KEYS: a }));
    assert.deepEqual(one.subjectKeys, [{ id: 'default', key: key1 }]);
    const two = dataAtRest(
      loadConfig({ SUBJECT_INDEX_KEYS: `k2:${key2.toString('base64')} k1:${key1.toString('base64')}` }),
    );
    assert.deepEqual(two.subjectKeys, [
      { id: 'k2', key: key2 },
      { id: 'k1', key: key1 },
    ]);
  });

  it('seals with the first key: IV, ciphertext and tag, with its id in the v3 form beside; a fresh IV each time', () => {
    const sealed = sealText(underBA, TEXT, ROW);
    assert.deepEqual(
      [sealed.clear, sealed.keyId, sealed.sealed!.length],
      [null, 'v3:key-b', 12 + Buffer.byteLength(TEXT) + 16],
    );
    assert.equal(sealed.sealed!.indexOf('ada@example.org'), -1);
    assert.notDeepEqual(sealText(underBA, TEXT, ROW).sealed, sealed.sealed);
    assert.equal(openText(underBA, sealed, ROW), TEXT);
  });

  it('binds a sealed text to its row: moved to another webhook, or from a body to an excerpt, it does not open, and says so', () => {
    const sealed = sealText(underA, TEXT, ROW);
    const excerpt = sealText(underA, TEXT, excerptBinding('5f0b1c9e-0000-4000-8000-000000000001', 1));
    const moved: Array<[typeof sealed, string]> = [
      [sealed, OTHER_ROW],
      [sealed, excerptBinding('5f0b1c9e-0000-4000-8000-000000000001', 1)],
      [excerpt, excerptBinding('5f0b1c9e-0000-4000-8000-000000000001', 2)],
      [excerpt, excerptBinding('5f0b1c9e-0000-4000-8000-000000000002', 1)],
    ];
    for (const [stored, binding] of moved) {
      assert.throws(() => openText(underA, stored, binding), {
        name: 'StoredTextDecryptionError',
        message:
          'a webhook body or response excerpt sealed with key "key-a" does not open: it belongs to another row, or it was altered (or the key under this id changed)',
      });
    }
  });

  it('uses the key derived for PostgreSQL rows (HKDF), never the raw key nor the Temporal one', () => {
    const [raw] = loadConfig({ PAYLOAD_ENCRYPTION_KEYS: a }).PAYLOAD_ENCRYPTION_KEYS!;
    const rows = purposeKey(raw.key, 'postgresRows');
    assert.equal(rows.length, 32);
    assert.notDeepEqual(rows, raw.key);
    assert.notDeepEqual(rows, purposeKey(raw.key, 'temporalPayloads'));
    for (const key of [raw.key, purposeKey(raw.key, 'temporalPayloads')]) {
      const forged = { clear: null, sealed: sealBytes(key, Buffer.from(TEXT), Buffer.from(ROW)), keyId: 'v2:key-a' };
      assert.throws(() => openText(underA, forged, ROW), StoredTextDecryptionError);
    }
  });

  it('still opens the legacy format (raw key, no binding, a bare key id) wherever the row is', () => {
    const [raw] = loadConfig({ PAYLOAD_ENCRYPTION_KEYS: a }).PAYLOAD_ENCRYPTION_KEYS!;
    const legacy = { clear: null, sealed: sealBytes(raw.key, Buffer.from(TEXT)), keyId: 'key-a' };
    assert.equal(openText(underA, legacy, ROW), TEXT);
    assert.equal(openText(underBA, legacy, OTHER_ROW), TEXT);
  });

  it('opens a text sealed under an older key while that key is listed, and names the key once it is not', () => {
    const old = sealText(underA, TEXT, ROW);
    assert.equal(openText(underBA, old, ROW), TEXT);
    assert.throws(
      () => openText(underB, old, ROW),
      (error: unknown) => {
        assert.ok(error instanceof StoredTextDecryptionError);
        assert.equal(
          error.message,
          'a webhook body or response excerpt is sealed with key id "key-a", which PAYLOAD_ENCRYPTION_KEYS no longer lists: list that key again to read it',
        );
        return true;
      },
    );
  });

  it('refuses altered or truncated ciphertext, and a key id whose key changed, without the text in the message', () => {
    const sealed = sealText(underA, TEXT, ROW);
    const altered = Buffer.from(sealed.sealed!);
    altered[20] ^= 1;
    const [otherA] = setting('key-a');
    const cases: Array<[Parameters<typeof openText>, string]> = [
      [
        [underA, { ...sealed, sealed: altered }, ROW],
        'it belongs to another row, or it was altered (or the key under this id changed)',
      ],
      [[underA, { ...sealed, sealed: sealed.sealed!.subarray(0, 27) }, ROW], 'its data is too short'],
      [
        [dataAtRest(loadConfig({ PAYLOAD_ENCRYPTION_KEYS: otherA })), sealed, ROW],
        'it belongs to another row, or it was altered (or the key under this id changed)',
      ],
    ];
    for (const [args, reason] of cases) {
      assert.throws(
        () => openText(...args),
        (error: unknown) => {
          assert.ok(error instanceof StoredTextDecryptionError);
          assert.equal(
            error.message,
            `a webhook body or response excerpt sealed with key "key-a" does not open: ${reason}`,
          );
          return true;
        },
      );
    }
  });
});
