import net from 'node:net';
import tls from 'node:tls';
import type { TemporalConnectionConfig } from '../lib/temporal-connection-config';
import { describeError } from '../lib/describe-error';
import { connectionFailureInWords } from './connection-failure';

/**
 * The TLS handshake's own error at `address`, or undefined when the handshake succeeds (or does not finish in
 * time). The client's grpc-js reports an untrusted server certificate only as `Failed to connect before the
 * deadline`; one handshake with node:tls, on the same certificates, says why.
 */
export function tlsHandshakeError(
  address: string,
  settings: TemporalConnectionConfig['tls'],
  timeoutMs = 2000,
): Promise<Error | undefined> {
  const options = settings === true || settings === undefined ? {} : settings;
  const colon = address.lastIndexOf(':');
  const host = address.slice(0, colon);
  const name = options.serverNameOverride ?? host;
  return new Promise((resolve) => {
    const socket = tls.connect({
      host,
      port: Number(address.slice(colon + 1)),
      servername: net.isIP(name) ? undefined : name,
      ca: options.serverRootCACertificate ? [Buffer.from(options.serverRootCACertificate)] : undefined,
      cert: options.clientCertPair ? Buffer.from(options.clientCertPair.crt) : undefined,
      key: options.clientCertPair ? Buffer.from(options.clientCertPair.key) : undefined,
      ALPNProtocols: ['h2'],
      checkServerIdentity: (_host, certificate) => tls.checkServerIdentity(name, certificate),
      timeout: timeoutMs,
    });
    const finish = (error?: Error) => {
      socket.destroy();
      resolve(error);
    };
    socket.once('secureConnect', () => finish());
    socket.once('error', (error) => finish(error));
    socket.once('timeout', () => finish());
  });
}

/** connectionFailureInWords for the client's Connection, asking the TLS handshake when grpc-js gave no reason. */
export async function clientConnectionFailureInWords(
  error: unknown,
  address: string,
  settings: TemporalConnectionConfig,
): Promise<string> {
  if (settings.tls !== undefined && /Failed to connect before the deadline/.test(describeError(error))) {
    const handshake = await tlsHandshakeError(address, settings.tls);
    if (handshake) return connectionFailureInWords(handshake, settings);
  }
  return connectionFailureInWords(error, settings);
}
