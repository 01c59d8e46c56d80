import assert from 'node:assert/strict';
import { loadConfig } from '../../../lib/config';
import { ConfigError } from '../../../lib/errors';

describe('configuration', () => {
  it('has documented defaults when nothing is set', () => {
    const config = loadConfig({});
    assert.equal(config.PORT, 3000);
    assert.equal(config.HOST, '127.0.0.1');
    assert.equal(config.DATABASE_URL, undefined);
    assert.equal(config.temporal.address, undefined);
    assert.equal(config.temporal.namespace, 'default');
    assert.equal(config.TEMPORAL_TASK_QUEUE, 'partner-webhooks');
    assert.deepEqual(config.API_VERSIONS, ['v1']);
    assert.equal(config.PARTNER_TIMEOUT_MS, 30000);
    assert.equal(config.TRUST_PROXY, false);
    assert.equal(config.LOG_LEVEL, 'info');
  });

  it('parses every kind of value', () => {
    const config = loadConfig({
      PORT: '8080',
      API_VERSIONS: 'v1, v2',
      TRUST_PROXY: 'true',
      TEMPORAL_ADDRESS: 'temporal:7233',
      DATABASE_URL: 'postgres://u:p@db:5432/x',
      PARTNER_ENDPOINT: 'https://partner.example/hook',
      LOG_LEVEL: 'debug',
    });
    assert.equal(config.PORT, 8080);
    assert.deepEqual(config.API_VERSIONS, ['v1', 'v2']);
    assert.equal(config.TRUST_PROXY, true);
    assert.equal(config.temporal.address, 'temporal:7233');
    assert.equal(config.PARTNER_ENDPOINT, 'https://partner.example/hook');
  });

  it('treats empty strings as unset', () => {
    assert.equal(loadConfig({ PORT: '', DATABASE_URL: '' }).PORT, 3000);
  });

  const invalid: Array<[Record<string, string>, string]> = [
    [{ PORT: 'abc' }, 'Invalid configuration: PORT must be a whole number'],
    [{ PORT: '70000' }, 'Invalid configuration: PORT must be at most 65535'],
    [{ DATABASE_URL: 'mysql://x' }, 'Invalid configuration: DATABASE_URL must be a postgres:// or postgresql:// URL'],
    [{ TEMPORAL_ADDRESS: 'no-port' }, 'Invalid configuration: TEMPORAL_ADDRESS must be host:port'],
    [{ PARTNER_ENDPOINT: 'ftp://x' }, 'Invalid configuration: PARTNER_ENDPOINT must be an http:// or https:// URL'],
    [
      { API_VERSIONS: 'v1,a/b' },
      'Invalid configuration: API_VERSIONS must be comma-separated path segments such as v1,v2',
    ],
    [{ TRUST_PROXY: 'maybe' }, 'Invalid configuration: TRUST_PROXY must be true or false'],
    [{ INTERNAL_API_TOKEN: 'short' }, 'Invalid configuration: INTERNAL_API_TOKEN must be at least 16 characters long'],
    [
      { PARTNER_SIGNING_SECRETS: 'secret-without-prefix' },
      'Invalid configuration: PARTNER_SIGNING_SECRETS must be whsec_ values (base64), separated by spaces',
    ],
    [
      { PARTNER_SIGNING_SECRETS: `whsec_${Buffer.alloc(8).toString('base64')}` },
      'Invalid configuration: PARTNER_SIGNING_SECRETS must each hold 24 to 64 bytes (base64 after whsec_)',
    ],
    [
      { PAYLOAD_ENCRYPTION_KEYS: Buffer.alloc(32).toString('base64') },
      'Invalid configuration: PAYLOAD_ENCRYPTION_KEYS must be keyId:base64key pairs separated by spaces (ids of A-Z a-z 0-9 . _ -)',
    ],
    [
      { PAYLOAD_ENCRYPTION_KEYS: `k1:${Buffer.alloc(16).toString('base64')}` },
      'Invalid configuration: PAYLOAD_ENCRYPTION_KEYS must each hold a 256-bit key: 32 bytes in base64 (openssl rand -base64 32)',
    ],
    [
      {
        PAYLOAD_ENCRYPTION_KEYS: `k1:${Buffer.alloc(32).toString('base64')} k1:${Buffer.alloc(32, 1).toString('base64')}`,
      },
      'Invalid configuration: PAYLOAD_ENCRYPTION_KEYS must not repeat a key id',
    ],
    [
      { PAYLOAD_ENCRYPTION_KEYS: 'k1:not*base64' },
      'Invalid configuration: PAYLOAD_ENCRYPTION_KEYS must be keyId:base64key pairs separated by spaces (ids of A-Z a-z 0-9 . _ -)',
    ],
    [
      { SUBJECT_INDEX_KEY: 'not*base64' },
      'Invalid configuration: SUBJECT_INDEX_KEY must be base64 (openssl rand -base64 32)',
    ],
    [
      { SUBJECT_INDEX_KEY: Buffer.alloc(16).toString('base64') },
      'Invalid configuration: SUBJECT_INDEX_KEY must hold 32 to 64 bytes in base64 (openssl rand -base64 32)',
    ],
    [
      { SUBJECT_INDEX_KEY: Buffer.alloc(65).toString('base64') },
      'Invalid configuration: SUBJECT_INDEX_KEY must hold 32 to 64 bytes in base64 (openssl rand -base64 32)',
    ],
    [{ CODEC_AUTH_TOKEN: 'short' }, 'Invalid configuration: CODEC_AUTH_TOKEN must be at least 16 characters long'],
    [
      { CODEC_AUTH_TOKEN: 'codec/token?0123456789' },
      'Invalid configuration: CODEC_AUTH_TOKEN must contain only letters, digits and . _ ~ - (it goes into a URL path)',
    ],
    [
      { WORKER_BUILD_ID: 'b1:latest' },
      'Invalid configuration: WORKER_BUILD_ID must be 1 to 128 of A-Z a-z 0-9 . _ - (an image tag or a git SHA)',
    ],
    [
      { WORKER_DEPLOYMENT_NAME: 'partner.webhooks' },
      'Invalid configuration: WORKER_DEPLOYMENT_NAME must be 1 to 128 of A-Z a-z 0-9 _ -',
    ],
    [
      { CODEC_CORS_ORIGINS: 'http://ui.example/path' },
      'Invalid configuration: CODEC_CORS_ORIGINS must be origins such as https://temporal.example.com (scheme, host, optional port; no path), separated by commas or spaces',
    ],
  ];
  for (const [env, message] of invalid) {
    it(`rejects ${JSON.stringify(env)} with one line naming the variable`, () => {
      assert.throws(
        () => loadConfig(env),
        (error: unknown) => {
          assert.ok(error instanceof ConfigError);
          assert.equal(error.message, message);
          return true;
        },
      );
    });
  }

  it('reads PARTNER_SIGNING_SECRETS as the keys of a rotation, in order', () => {
    const [a, b] = [Buffer.alloc(32, 1), Buffer.alloc(24, 2)];
    const config = loadConfig({
      PARTNER_SIGNING_SECRETS: ` whsec_${a.toString('base64')}  whsec_${b.toString('base64')} `,
    });
    assert.deepEqual(config.PARTNER_SIGNING_SECRETS, [a, b]);
  });

  it('reads PAYLOAD_ENCRYPTION_KEYS as id and key pairs, the encrypting one first, and CODEC_CORS_ORIGINS as a list', () => {
    const [a, b] = [Buffer.alloc(32, 1), Buffer.alloc(32, 2)];
    const config = loadConfig({
      PAYLOAD_ENCRYPTION_KEYS: ` 2025-06:${a.toString('base64')}  old_key.1:${b.toString('base64')} `,
      CODEC_CORS_ORIGINS: 'http://127.0.0.1:8233, https://ui.example.com  http://localhost:8080',
    });
    assert.deepEqual(config.PAYLOAD_ENCRYPTION_KEYS, [
      { id: '2025-06', key: a },
      { id: 'old_key.1', key: b },
    ]);
    assert.deepEqual(config.CODEC_CORS_ORIGINS, [
      'http://127.0.0.1:8233',
      'https://ui.example.com',
      'http://localhost:8080',
    ]);
    assert.deepEqual(loadConfig({}).CODEC_CORS_ORIGINS, []);
  });

  it('never echoes a secret value in the error', () => {
    assert.throws(
      () => loadConfig({ SCIM_BEARER_TOKEN: 'sekrit' }),
      (error: Error) => !error.message.includes('sekrit'),
    );
  });
});
