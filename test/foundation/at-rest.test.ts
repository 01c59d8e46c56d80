// lib/at-rest.ts over lib/aes-gcm.ts: how a text is sealed, which key opens it after a rotation, and what a
// text that cannot be opened says (the key id, never the text).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { dataAtRest, openText, sealText, StoredTextDecryptionError } from '../../lib/at-rest';
import { loadConfig } from '../../lib/config';

const setting = (...ids: string[]) => ids.map((id) => `${id}:${randomBytes(32).toString('base64')}`);
const TEXT = 'accepted ada@example.org (Example) ✓';

describe('data at rest', () => {
  const [a, b] = setting('key-a', 'key-b');
  const underA = dataAtRest(loadConfig({ PAYLOAD_ENCRYPTION_KEYS: a }));
  const underBA = dataAtRest(loadConfig({ PAYLOAD_ENCRYPTION_KEYS: `${b} ${a}` }));
  const underB = dataAtRest(loadConfig({ PAYLOAD_ENCRYPTION_KEYS: b }));

  it('keeps a text in clear without keys, and lists no index key', () => {
    const atRest = dataAtRest(loadConfig({}));
    assert.deepEqual(sealText(atRest, TEXT), { clear: TEXT, sealed: null, keyId: null });
    assert.deepEqual(atRest.subjectKeys, []);
    assert.equal(openText(atRest, { clear: TEXT, sealed: null, keyId: null }), TEXT);
    assert.deepEqual(sealText(atRest, null), { clear: null, sealed: null, keyId: null });
  });

  it('lists SUBJECT_INDEX_KEYS newest first, and SUBJECT_INDEX_KEY as the one key `default`, whatever the payload keys', () => {
    const [key1, key2] = [randomBytes(32), randomBytes(48)];
    const one = dataAtRest(loadConfig({ SUBJECT_INDEX_KEY: key1.toString('base64'), PAYLOAD_ENCRYPTION_KEYS: a }));
    assert.deepEqual(one.subjectKeys, [{ id: 'default', key: key1 }]);
    const two = dataAtRest(loadConfig({ SUBJECT_INDEX_KEYS: `k2:${key2.toString('base64')} k1:${key1.toString('base64')}` }));
    assert.deepEqual(two.subjectKeys, [{ id: 'k2', key: key2 }, { id: 'k1', key: key1 }]);
  });

  it('seals with the first key: IV, ciphertext and tag, with its id beside; a fresh IV each time', () => {
    const sealed = sealText(underBA, TEXT);
    assert.deepEqual([sealed.clear, sealed.keyId, sealed.sealed!.length], [null, 'key-b', 12 + Buffer.byteLength(TEXT) + 16]);
    assert.equal(sealed.sealed!.indexOf('ada@example.org'), -1);
    assert.notDeepEqual(sealText(underBA, TEXT).sealed, sealed.sealed);
    assert.equal(openText(underBA, sealed), TEXT);
  });

  it('opens a text sealed under an older key while that key is listed, and names the key once it is not', () => {
    const old = sealText(underA, TEXT);
    assert.equal(openText(underBA, old), TEXT);
    assert.throws(() => openText(underB, old), (error: unknown) => {
      assert.ok(error instanceof StoredTextDecryptionError);
      assert.equal(error.message, 'a webhook body or response excerpt is sealed with key id "key-a", which PAYLOAD_ENCRYPTION_KEYS no longer lists: list that key again to read it');
      return true;
    });
  });

  it('refuses altered or truncated ciphertext, and a key id whose key changed, without the text in the message', () => {
    const sealed = sealText(underA, TEXT);
    const altered = Buffer.from(sealed.sealed!);
    altered[20] ^= 1;
    const [otherA] = setting('key-a');
    const cases: Array<[Parameters<typeof openText>, string]> = [
      [[underA, { ...sealed, sealed: altered }], 'authentication failed (the data was altered, or the key under this id changed)'],
      [[underA, { ...sealed, sealed: sealed.sealed!.subarray(0, 27) }], 'its data is too short'],
      [[dataAtRest(loadConfig({ PAYLOAD_ENCRYPTION_KEYS: otherA })), sealed], 'authentication failed (the data was altered, or the key under this id changed)'],
    ];
    for (const [args, reason] of cases) {
      assert.throws(() => openText(...args), (error: unknown) => {
        assert.ok(error instanceof StoredTextDecryptionError);
        assert.equal(error.message, `a webhook body or response excerpt sealed with key "key-a" does not open: ${reason}`);
        return true;
      });
    }
  });
});
