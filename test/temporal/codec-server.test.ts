// The codec server (/codec) over real HTTP on loopback: Temporal's remote codec protocol in proto3 JSON, the
// bearer token in its two forms (header, and the path Temporal UI is given), CORS for listed origins only,
// and 400s for malformed or undecryptable bodies.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import candidateNew from '../fixtures/events/candidate-new.json';
import { AesGcmPayloadCodec } from '../../temporal/payload-codec';
import { payloadsFromJson, payloadsToJson } from '../../api/codec/payloads-json';
import { uiCodecEndpoint } from '../../api/codec/router';
import { startTestApi, type TestApi } from '../support/api';
import { CODEC_TOKEN } from '../support/tokens';

const UI_ORIGIN = 'http://127.0.0.1:8233';
const KEY = { id: 'k-2025', key: randomBytes(32) };
const ENV = {
  PAYLOAD_ENCRYPTION_KEYS: `${KEY.id}:${KEY.key.toString('base64')}`,
  CODEC_AUTH_TOKEN: CODEC_TOKEN,
  CODEC_CORS_ORIGINS: `${UI_ORIGIN}, https://ui.example.com`,
};

const candidatePayloads = () => payloadsToJson([defaultPayloadConverter.toPayload(candidateNew)]);

describe('codec server (/codec)', function () {
  this.timeout(30_000);
  let service: TestApi;
  let url: string;

  const post = (
    path: string,
    body: unknown,
    headers: Record<string, string> = { authorization: `Bearer ${CODEC_TOKEN}` },
  ) =>
    fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const preflight = (path: string, origin: string) =>
    fetch(`${url}${path}`, {
      method: 'OPTIONS',
      headers: {
        origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type,x-namespace',
      },
    });
  const corsHeaders = (response: Response) =>
    Object.fromEntries([...response.headers].filter(([name]) => name.startsWith('access-control-') || name === 'vary'));

  before(async () => {
    service = await startTestApi(ENV);
    url = service.api.url;
  });
  after(() => service?.close());

  it('is not mounted without PAYLOAD_ENCRYPTION_KEYS, and is with the keys alone (for named tokens of scope decode)', async () => {
    const cases: Array<[Record<string, string>, number, unknown]> = [
      [{ CODEC_AUTH_TOKEN: CODEC_TOKEN }, 404, { detail: 'Not found.' }],
      [{ PAYLOAD_ENCRYPTION_KEYS: ENV.PAYLOAD_ENCRYPTION_KEYS }, 401, { detail: 'Invalid token.' }],
    ];
    for (const [env, status, body] of cases) {
      const other = await startTestApi(env);
      try {
        const response = await fetch(`${other.api.url}/codec/decode`, {
          method: 'POST',
          headers: { authorization: `Bearer ${CODEC_TOKEN}` },
          body: '{}',
        });
        assert.deepEqual([response.status, await response.json()], [status, body], JSON.stringify(Object.keys(env)));
      } finally {
        await other.close();
      }
    }
  });

  describe('authentication', () => {
    it('answers 401 without a token, with a wrong one, and with a wrong token in the UI path', async () => {
      for (const action of ['encode', 'decode']) {
        const missing = await post(`/codec/${action}`, candidatePayloads(), {});
        assert.equal(missing.status, 401);
        assert.equal(missing.headers.get('www-authenticate'), 'Bearer realm="codec"');
        assert.deepEqual(await missing.json(), { detail: 'Authentication credentials were not provided.' });

        const wrong = await post(`/codec/${action}`, candidatePayloads(), { authorization: `Bearer ${CODEC_TOKEN}x` });
        assert.equal(wrong.status, 401);
        assert.deepEqual(await wrong.json(), { detail: 'Invalid token.' });

        const wrongPath = await post(`/codec/ui/${CODEC_TOKEN.slice(0, -1)}/${action}`, candidatePayloads(), {});
        assert.equal(wrongPath.status, 401);
        assert.deepEqual(await wrongPath.json(), { detail: 'Invalid token.' });
      }
    });

    it('checks the token before it reads the body', async () => {
      const response = await post('/codec/decode', 'not json', {});
      assert.equal(response.status, 401);
    });
  });

  describe('CORS', () => {
    it('answers a preflight from a listed origin with exactly the codec headers', async () => {
      for (const path of ['/codec/decode', '/codec/encode', `/codec/ui/${CODEC_TOKEN}/decode`]) {
        const response = await preflight(path, UI_ORIGIN);
        assert.equal(response.status, 204, path);
        assert.deepEqual(
          corsHeaders(response),
          {
            'access-control-allow-origin': UI_ORIGIN,
            'access-control-allow-credentials': 'true',
            'access-control-allow-methods': 'POST',
            'access-control-allow-headers': 'X-Namespace,Content-Type,Authorization',
            vary: 'Origin',
          },
          path,
        );
      }
      assert.equal(
        (await preflight('/codec/decode', 'https://ui.example.com')).headers.get('access-control-allow-origin'),
        'https://ui.example.com',
      );
    });

    it('gives any other origin no CORS header at all', async () => {
      for (const origin of ['http://127.0.0.1:8234', 'https://evil.example', 'null', 'http://localhost:8233']) {
        const response = await preflight('/codec/decode', origin);
        assert.equal(response.status, 204, origin);
        assert.deepEqual(corsHeaders(response), { vary: 'Origin' }, origin);
        const actual = await post('/codec/decode', candidatePayloads(), {
          authorization: `Bearer ${CODEC_TOKEN}`,
          origin,
        });
        assert.equal(actual.status, 200);
        assert.deepEqual(corsHeaders(actual), { vary: 'Origin' }, origin);
      }
    });

    it('lets a listed origin read answers, errors included', async () => {
      const ok = await post('/codec/decode', candidatePayloads(), {
        authorization: `Bearer ${CODEC_TOKEN}`,
        origin: UI_ORIGIN,
      });
      assert.deepEqual(corsHeaders(ok), {
        'access-control-allow-origin': UI_ORIGIN,
        'access-control-allow-credentials': 'true',
        vary: 'Origin',
      });
      const denied = await post('/codec/decode', candidatePayloads(), { origin: UI_ORIGIN });
      assert.equal(denied.status, 401);
      assert.equal(denied.headers.get('access-control-allow-origin'), UI_ORIGIN);
    });
  });

  describe('encode and decode', () => {
    it('round trip over HTTP, in proto3 JSON, and the same codec as the worker', async () => {
      const plain = candidatePayloads();
      const encoded = await post('/codec/encode', plain);
      assert.equal(encoded.status, 200);
      assert.match(encoded.headers.get('content-type')!, /^application\/json/);
      const encrypted = (await encoded.json()) as ReturnType<typeof payloadsToJson>;
      assert.equal(encrypted.payloads.length, 1);
      assert.deepEqual(Object.keys(encrypted.payloads[0].metadata).sort(), [
        'encoding',
        'encryption-key-derivation',
        'encryption-key-id',
      ]);
      assert.equal(Buffer.from(encrypted.payloads[0].metadata.encoding, 'base64').toString(), 'binary/encrypted');
      assert.equal(Buffer.from(encrypted.payloads[0].metadata['encryption-key-id'], 'base64').toString(), KEY.id);
      assert.ok(!Buffer.from(encrypted.payloads[0].data, 'base64').includes('ada@example.org'));

      const decoded = await post('/codec/decode', encrypted);
      assert.equal(decoded.status, 200);
      assert.deepEqual(await decoded.json(), plain);

      // What the worker's codec wrote, the server decodes (the UI's case), through the UI's path form.
      const [fromWorker] = await new AesGcmPayloadCodec([KEY]).encode([
        defaultPayloadConverter.toPayload({ email: 'grace@example.org' }),
      ]);
      const viaUiPath = await fetch(`${uiCodecEndpoint(url, CODEC_TOKEN)}/decode`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-namespace': 'default', origin: UI_ORIGIN },
        body: JSON.stringify(payloadsToJson([fromWorker])),
      });
      assert.equal(viaUiPath.status, 200);
      const [shown] = payloadsFromJson(await viaUiPath.json());
      assert.deepEqual(defaultPayloadConverter.fromPayload(shown), { email: 'grace@example.org' });
    });

    it('passes payloads it did not encrypt through decode, and accepts empty lists and absent fields', async () => {
      const plain = candidatePayloads();
      assert.deepEqual(await (await post('/codec/decode', plain)).json(), plain);
      assert.deepEqual(await (await post('/codec/decode', { payloads: [] })).json(), { payloads: [] });
      const [encryptedEmpty] = payloadsFromJson(await (await post('/codec/encode', { payloads: [{}] })).json());
      const [back] = payloadsFromJson(await (await post('/codec/decode', payloadsToJson([encryptedEmpty]))).json());
      assert.deepEqual(back, { metadata: {}, data: Buffer.alloc(0) } satisfies Payload);
    });

    it('answers a malformed body with 400 in the error format, never 5xx', async () => {
      const bad = await post('/codec/decode', '{"payloads": [');
      assert.equal(bad.status, 400);
      assert.match(((await bad.json()) as { detail: string }).detail, /^JSON parse error - /);

      const cases: Array<[unknown, Array<{ path: string; message: string }>]> = [
        [{}, [{ path: 'payloads', message: 'must be an array of payloads' }]],
        [{ payloads: 'x' }, [{ path: 'payloads', message: 'must be an array of payloads' }]],
        [{ payloads: [{ data: 'not base64!' }] }, [{ path: 'payloads[0].data', message: 'must be base64' }]],
        [
          { payloads: [{ metadata: { encoding: 42 } }] },
          [{ path: 'payloads[0].metadata.encoding', message: 'Invalid input: expected string, received number' }],
        ],
        [[1, 2], [{ path: '(root)', message: 'Invalid input: expected object, received array' }]],
      ];
      for (const [body, errors] of cases) {
        const response = await post('/codec/encode', body);
        assert.equal(response.status, 400, JSON.stringify(body));
        assert.deepEqual(
          await response.json(),
          {
            detail: 'Invalid payloads: expected {"payloads": [{"metadata": {…}, "data": "…"}]} in proto3 JSON.',
            errors,
          },
          JSON.stringify(body),
        );
      }
      const text = await post('/codec/encode', 'payloads', {
        authorization: `Bearer ${CODEC_TOKEN}`,
        'content-type': 'text/plain',
      });
      assert.equal(text.status, 415);
    });

    it('answers undecryptable payloads with 400 naming each one', async () => {
      const [good] = await new AesGcmPayloadCodec([KEY]).encode([defaultPayloadConverter.toPayload('fine')]);
      const tampered = { ...good, data: Buffer.from(good.data!).map((b, i) => (i === 20 ? b ^ 1 : b)) };
      const [otherKey] = await new AesGcmPayloadCodec([{ id: 'unknown', key: randomBytes(32) }]).encode([
        defaultPayloadConverter.toPayload('x'),
      ]);
      const response = await post('/codec/decode', payloadsToJson([good, tampered, otherKey]));
      assert.equal(response.status, 400);
      assert.deepEqual(await response.json(), {
        detail:
          'The payloads cannot be decoded: Cannot decrypt a payload with key "k-2025": authentication failed (the data was altered, or the key under this id changed)',
        errors: [
          {
            path: 'payloads[1]',
            message:
              'Cannot decrypt a payload with key "k-2025": authentication failed (the data was altered, or the key under this id changed)',
          },
          {
            path: 'payloads[2]',
            message:
              'Cannot decrypt a payload: its encryption key id "unknown" is not in PAYLOAD_ENCRYPTION_KEYS (ids: k-2025)',
          },
        ],
      });
    });
  });
});
