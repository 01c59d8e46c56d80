import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadClientConfigProfile, type ClientConfigProfile, type ConfigDataSource } from '@temporalio/envconfig';
import type { TLSConfig } from '@temporalio/client';
import { z } from 'zod';
import { ConfigError } from './errors';

/**
 * How the API, the worker and the CLI reach Temporal. Read by Temporal's own environment configuration
 * (@temporalio/envconfig), so the temporal.toml profile and TEMPORAL_* variables that configure a user's
 * `temporal` CLI configure the service too; certificates are read and parsed here, once, at start.
 */
export interface TemporalConnectionConfig {
  /** host:port; undefined when nothing names a server (`start` then runs a dev server). */
  readonly address: string | undefined;
  readonly namespace: string;
  /** Where the settings came from, for logs: the variables, and the temporal.toml profile when a file was read. */
  readonly source: string;
  /** TLS options (true: system roots, no client certificate); undefined: plain gRPC. */
  readonly tls: TLSConfig | true | undefined;
  /** Sent as `authorization: Bearer …`; a secret: never logged. */
  readonly apiKey: string | undefined;
  /** Extra gRPC headers (TEMPORAL_GRPC_META_*). */
  readonly metadata: Record<string, string> | undefined;
  /** What the operator configured, so a refusal can say which setting to look at. */
  readonly clientCertificate: boolean;
}

const hostPort = z.string().regex(/^[^\s:/]+:\d{1,5}$/);

const invalid = (message: string) => new ConfigError(`Invalid configuration: ${message}`);
const firstLine = (error: unknown) => (error instanceof Error ? error.message : String(error)).split('\n')[0];

/** The file envconfig reads when TEMPORAL_CONFIG_FILE is unset (Linux/macOS layout of the temporal CLI). */
function defaultConfigFile(env: Record<string, string>): string | undefined {
  if (os.platform() === 'darwin')
    return env.HOME && path.join(env.HOME, 'Library', 'Application Support', 'temporalio', 'temporal.toml');
  const dir = env.XDG_CONFIG_HOME || (env.HOME && path.join(env.HOME, '.config'));
  return dir ? path.join(dir, 'temporalio', 'temporal.toml') : undefined;
}

/**
 * The environment as envconfig should see it: empty values count as unset, as everywhere in lib/config.ts (except gRPC
 * headers, where empty removes a header of the file).
 */
function presentVariables(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter(
      (entry): entry is [string, string] =>
        entry[1] !== undefined && (entry[1] !== '' || entry[0].startsWith('TEMPORAL_GRPC_META_')),
    ),
  );
}

/**
 * Reads the connection settings from `env` and the temporal.toml profile; throws ConfigError naming the setting at
 * fault.
 */
export function loadTemporalConnection(rawEnv: NodeJS.ProcessEnv): TemporalConnectionConfig {
  const env = presentVariables(rawEnv);
  const file = env.TEMPORAL_CONFIG_FILE ?? defaultConfigFile(env);
  const profileName = env.TEMPORAL_PROFILE ?? 'default';
  if (env.TEMPORAL_CONFIG_FILE && !existsSync(env.TEMPORAL_CONFIG_FILE))
    throw invalid(`TEMPORAL_CONFIG_FILE names ${env.TEMPORAL_CONFIG_FILE}, which does not exist`);
  let profile: ClientConfigProfile;
  try {
    profile = loadClientConfigProfile({ overrideEnvVars: env });
  } catch (error) {
    if (/^Profile '.*' not found/.test(firstLine(error)))
      throw invalid(
        `TEMPORAL_PROFILE names profile "${profileName}", which ${file ?? 'no config file'} does not define`,
      );
    throw invalid(`${env.TEMPORAL_CONFIG_FILE ? 'TEMPORAL_CONFIG_FILE' : file} cannot be used: ${firstLine(error)}`);
  }
  const fromFile = file !== undefined && existsSync(file);
  // The variable that set a value, or the key of the profile it came from.
  const nameOf = (variable: string, key: string) =>
    env[variable] !== undefined || !fromFile ? variable : `${key} of profile "${profileName}" in ${file}`;

  // envconfig reads it but the TypeScript SDK has no such option: refuse it rather than silently verify.
  if (env.TEMPORAL_TLS_DISABLE_HOST_VERIFICATION === 'true' || env.TEMPORAL_TLS_DISABLE_HOST_VERIFICATION === '1') {
    throw invalid(
      "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION is not supported by the TypeScript SDK: name the certificate's " +
        'host with TEMPORAL_TLS_SERVER_NAME instead',
    );
  }
  const address = profile.address;
  if (address !== undefined && !hostPort.safeParse(address).success)
    throw invalid(`${nameOf('TEMPORAL_ADDRESS', 'address')} must be host:port`);
  const tls = readTls(profile, nameOf);
  if (address === undefined && (tls || profile.apiKey)) {
    throw invalid(
      'TEMPORAL_ADDRESS (or the address of a temporal.toml profile) must be set when TLS or an API key is configured',
    );
  }
  return {
    address,
    namespace: profile.namespace ?? 'default',
    source: fromFile ? `TEMPORAL_* variables over profile "${profileName}" in ${file}` : 'TEMPORAL_* variables',
    tls,
    apiKey: profile.apiKey,
    metadata: profile.grpcMeta,
    clientCertificate: tls !== undefined && tls !== true && tls.clientCertPair !== undefined,
  };
}

type NameOf = (variable: string, key: string) => string;

/** The TLS options with every certificate read and parsed now, so a bad one stops the process at start. */
function readTls(profile: ClientConfigProfile, nameOf: NameOf): TLSConfig | true | undefined {
  const tls = profile.tls;
  if (tls?.disabled) return undefined;
  if (!tls) return profile.apiKey ? true : undefined;
  const caName = sourceName(tls.serverCACert, nameOf, 'SERVER_CA_CERT', 'server_ca_cert');
  const certName = sourceName(tls.clientCert, nameOf, 'CLIENT_CERT', 'client_cert');
  const keyName = sourceName(tls.clientKey, nameOf, 'CLIENT_KEY', 'client_key');
  const ca = tls.serverCACert && readSource(tls.serverCACert, caName);
  if (ca) parseCertificate(ca, caName);
  const crt = tls.clientCert && readSource(tls.clientCert, certName);
  const key = tls.clientKey && readSource(tls.clientKey, keyName);
  if (crt && !key)
    throw invalid(`${certName} is set without TEMPORAL_TLS_CLIENT_KEY_PATH or TEMPORAL_TLS_CLIENT_KEY_DATA`);
  if (key && !crt)
    throw invalid(`${keyName} is set without TEMPORAL_TLS_CLIENT_CERT_PATH or TEMPORAL_TLS_CLIENT_CERT_DATA`);
  if (crt && key) {
    const certificate = parseCertificate(crt, certName);
    if (!certificate.checkPrivateKey(parseKey(key, keyName)))
      throw invalid(`${keyName} is not the private key of the certificate in ${certName}`);
  }
  return {
    serverNameOverride: tls.serverName,
    serverRootCACertificate: ca,
    clientCertPair: crt && key ? { crt, key } : undefined,
  };
}

function sourceName(source: ConfigDataSource | undefined, nameOf: NameOf, variable: string, key: string): string {
  const kind = source && 'data' in source ? 'DATA' : 'PATH';
  return nameOf(`TEMPORAL_TLS_${variable}_${kind}`, `tls.${key}_${kind.toLowerCase()}`);
}

function readSource(source: ConfigDataSource, name: string): Buffer {
  if ('data' in source) return Buffer.from(source.data);
  try {
    return readFileSync(source.path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT'
        ? 'no such file'
        : code === 'EACCES'
          ? 'permission denied'
          : code === 'EISDIR'
            ? 'it is a directory'
            : firstLine(error);
    throw invalid(`${name} cannot be read: ${source.path} (${why})`);
  }
}

// The parse errors of node:crypto would be cryptic, and must not quote the text: one line naming the setting.
function parseCertificate(pem: Buffer, name: string): X509Certificate {
  try {
    return new X509Certificate(pem);
  } catch {
    throw invalid(`${name} is not a PEM certificate`);
  }
}

function parseKey(pem: Buffer, name: string): KeyObject {
  try {
    return createPrivateKey(pem);
  } catch {
    throw invalid(`${name} is not a PEM private key (an unencrypted one)`);
  }
}
