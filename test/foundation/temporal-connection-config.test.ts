// Temporal's connection settings (lib/temporal-connection-config.ts): TEMPORAL_* variables and temporal.toml
// profiles through @temporalio/envconfig, certificates read and parsed at start, one line per mistake.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { loadConfig } from '../../lib/config';
import { runCli } from '../support/cli';
import { tempDir } from '../support/temporal';
import { makeTestCertificates, type TestCertificates } from '../support/tls-proxy';
import { ConfigError } from '../../lib/errors';

describe('Temporal connection configuration', function () {
  this.timeout(30_000);
  let certs: TestCertificates;
  let dir: string;
  let toml: string;

  before(async () => {
    certs = await makeTestCertificates();
    dir = await tempDir('temporal-config');
    await writeFile(
      path.join(dir, 'not-a-cert.pem'),
      '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n',
    );
    toml = path.join(dir, 'temporal.toml');
    await writeFile(
      toml,
      [
        '[profile.default]',
        'address = "default.example:7233"',
        '[profile.cloud]',
        'address = "ns.acct.tmprl.cloud:7233"',
        'namespace = "ns.acct"',
        'api_key = "profile-key"',
        '[profile.cloud.grpc_meta]',
        'x-team = "partners"',
        '[profile.mtls]',
        'address = "temporal.internal:7233"',
        '[profile.mtls.tls]',
        `server_ca_cert_path = "${certs.ca}"`,
        `client_cert_path = "${certs.clientCert}"`,
        'client_key_path = "/nowhere/client.key"',
        '',
      ].join('\n'),
    );
  });

  after(async () => {
    for (const folder of [certs?.dir, dir]) if (folder) await rm(folder, { recursive: true, force: true });
  });

  it('is plain gRPC, with no address, when nothing is set (start then runs a dev server)', () => {
    const { temporal } = loadConfig({});
    assert.deepEqual(
      { ...temporal },
      {
        address: undefined,
        namespace: 'default',
        source: 'TEMPORAL_* variables',
        tls: undefined,
        apiKey: undefined,
        metadata: undefined,
        clientCertificate: false,
      },
    );
  });

  it('reads the certificates once, from paths or data, with the server name and gRPC headers', () => {
    const { temporal } = loadConfig({
      TEMPORAL_ADDRESS: 'temporal.internal:7233',
      TEMPORAL_NAMESPACE: 'partners',
      TEMPORAL_TLS_SERVER_CA_CERT_DATA: readFileSync(certs.ca, 'utf8'),
      TEMPORAL_TLS_CLIENT_CERT_PATH: certs.clientCert,
      TEMPORAL_TLS_CLIENT_KEY_PATH: certs.clientKey,
      TEMPORAL_TLS_SERVER_NAME: 'localhost',
      TEMPORAL_GRPC_META_X_TEAM: 'partners',
    });
    assert.equal(temporal.address, 'temporal.internal:7233');
    assert.equal(temporal.namespace, 'partners');
    assert.deepEqual(temporal.tls, {
      serverNameOverride: 'localhost',
      serverRootCACertificate: readFileSync(certs.ca),
      clientCertPair: { crt: readFileSync(certs.clientCert), key: readFileSync(certs.clientKey) },
    });
    assert.deepEqual(temporal.metadata, { 'x-team': 'partners' });
    assert.equal(temporal.clientCertificate, true);
  });

  it('turns TLS on with system roots for an API key alone', () => {
    const { temporal } = loadConfig({ TEMPORAL_ADDRESS: 'ns.acct.tmprl.cloud:7233', TEMPORAL_API_KEY: 'a-key' });
    assert.deepEqual([temporal.tls, temporal.apiKey], [true, 'a-key']);
  });

  it('reads a temporal.toml profile, and the variables override it', () => {
    const { temporal } = loadConfig({
      TEMPORAL_CONFIG_FILE: toml,
      TEMPORAL_PROFILE: 'cloud',
      TEMPORAL_NAMESPACE: 'other.acct',
    });
    assert.deepEqual(
      [temporal.address, temporal.namespace, temporal.apiKey, temporal.tls, temporal.metadata, temporal.source],
      [
        'ns.acct.tmprl.cloud:7233',
        'other.acct',
        'profile-key',
        true,
        { 'x-team': 'partners' },
        `TEMPORAL_* variables over profile "cloud" in ${toml}`,
      ],
    );
    assert.equal(loadConfig({ TEMPORAL_CONFIG_FILE: toml }).temporal.address, 'default.example:7233');
  });

  const invalid: Array<[string, () => Record<string, string>, () => string]> = [
    [
      'a missing certificate file',
      () => ({ TEMPORAL_ADDRESS: 't:7233', TEMPORAL_TLS_SERVER_CA_CERT_PATH: path.join(dir, 'missing.pem') }),
      () =>
        `Invalid configuration: TEMPORAL_TLS_SERVER_CA_CERT_PATH cannot be read: ${path.join(dir, 'missing.pem')} (no such file)`,
    ],
    [
      'a folder for a file',
      () => ({
        TEMPORAL_ADDRESS: 't:7233',
        TEMPORAL_TLS_CLIENT_CERT_PATH: dir,
        TEMPORAL_TLS_CLIENT_KEY_PATH: certs.clientKey,
      }),
      () => `Invalid configuration: TEMPORAL_TLS_CLIENT_CERT_PATH cannot be read: ${dir} (it is a directory)`,
    ],
    [
      'a certificate that does not parse',
      () => ({ TEMPORAL_ADDRESS: 't:7233', TEMPORAL_TLS_SERVER_CA_CERT_PATH: path.join(dir, 'not-a-cert.pem') }),
      () => 'Invalid configuration: TEMPORAL_TLS_SERVER_CA_CERT_PATH is not a PEM certificate',
    ],
    [
      'certificate data that does not parse',
      () => ({
        TEMPORAL_ADDRESS: 't:7233',
        TEMPORAL_TLS_CLIENT_CERT_DATA: 'secret-looking text',
        TEMPORAL_TLS_CLIENT_KEY_PATH: certs.clientKey,
      }),
      () => 'Invalid configuration: TEMPORAL_TLS_CLIENT_CERT_DATA is not a PEM certificate',
    ],
    [
      'a key that does not parse',
      () => ({
        TEMPORAL_ADDRESS: 't:7233',
        TEMPORAL_TLS_CLIENT_CERT_PATH: certs.clientCert,
        TEMPORAL_TLS_CLIENT_KEY_PATH: certs.clientCert,
      }),
      () => 'Invalid configuration: TEMPORAL_TLS_CLIENT_KEY_PATH is not a PEM private key (an unencrypted one)',
    ],
    [
      'the key of another certificate',
      () => ({
        TEMPORAL_ADDRESS: 't:7233',
        TEMPORAL_TLS_CLIENT_CERT_PATH: certs.clientCert,
        TEMPORAL_TLS_CLIENT_KEY_PATH: certs.serverKey,
      }),
      () =>
        'Invalid configuration: TEMPORAL_TLS_CLIENT_KEY_PATH is not the private key of the certificate in TEMPORAL_TLS_CLIENT_CERT_PATH',
    ],
    [
      'a certificate without its key',
      () => ({ TEMPORAL_ADDRESS: 't:7233', TEMPORAL_TLS_CLIENT_CERT_PATH: certs.clientCert }),
      () =>
        'Invalid configuration: TEMPORAL_TLS_CLIENT_CERT_PATH is set without TEMPORAL_TLS_CLIENT_KEY_PATH or TEMPORAL_TLS_CLIENT_KEY_DATA',
    ],
    [
      'a bad key path in a profile',
      () => ({ TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'mtls' }),
      () =>
        `Invalid configuration: tls.client_key_path of profile "mtls" in ${toml} cannot be read: /nowhere/client.key (no such file)`,
    ],
    [
      'an address without a port',
      () => ({ TEMPORAL_ADDRESS: 'no-port' }),
      () => 'Invalid configuration: TEMPORAL_ADDRESS must be host:port',
    ],
    [
      'TLS without an address',
      () => ({ TEMPORAL_API_KEY: 'a-key' }),
      () =>
        'Invalid configuration: TEMPORAL_ADDRESS (or the address of a temporal.toml profile) must be set when TLS or an API key is configured',
    ],
    [
      'a config file that does not exist',
      () => ({ TEMPORAL_CONFIG_FILE: path.join(dir, 'none.toml') }),
      () => `Invalid configuration: TEMPORAL_CONFIG_FILE names ${path.join(dir, 'none.toml')}, which does not exist`,
    ],
    [
      'a profile the file does not define',
      () => ({ TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'staging' }),
      () => `Invalid configuration: TEMPORAL_PROFILE names profile "staging", which ${toml} does not define`,
    ],
    [
      'host verification turned off',
      () => ({ TEMPORAL_ADDRESS: 't:7233', TEMPORAL_TLS: 'true', TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: 'true' }),
      () =>
        "Invalid configuration: TEMPORAL_TLS_DISABLE_HOST_VERIFICATION is not supported by the TypeScript SDK: name the certificate's host with TEMPORAL_TLS_SERVER_NAME instead",
    ],
  ];
  for (const [what, env, message] of invalid) {
    it(`rejects ${what} with one line naming the setting`, () => {
      assert.throws(
        () => loadConfig(env()),
        (error: unknown) => {
          assert.ok(error instanceof ConfigError);
          assert.equal(error.message, message());
          return true;
        },
      );
    });
  }

  it('stops `partner-service api` with that one line and exit code 2, before anything starts', async () => {
    const result = await runCli(['api'], {
      PATH: process.env.PATH,
      TEMPORAL_ADDRESS: 't:7233',
      TEMPORAL_TLS_CLIENT_CERT_PATH: certs.clientCert,
      TEMPORAL_TLS_CLIENT_KEY_PATH: certs.serverKey,
    });
    assert.deepEqual(
      [result.code, result.stdout, result.stderr],
      [
        2,
        '',
        'Invalid configuration: TEMPORAL_TLS_CLIENT_KEY_PATH is not the private key of the certificate in TEMPORAL_TLS_CLIENT_CERT_PATH\n',
      ],
    );
  });
});
