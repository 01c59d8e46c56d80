import { describeError } from '../lib/describe-error';
import type { TemporalConnectionConfig } from '../lib/temporal-connection-config';

/** What was configured, so a refusal can name the setting to look at. */
export type ConnectionCredentials = Pick<TemporalConnectionConfig, 'tls' | 'apiKey' | 'clientCertificate'>;

const UNTRUSTED_SERVER =
  "the server's certificate is not trusted: is TEMPORAL_TLS_SERVER_CA_CERT_PATH (or _DATA) the CA that signed it?";

/** The error's text and its causes': the client's ServiceError keeps the gRPC status in `cause`. */
function textOf(error: unknown): string {
  const parts: string[] = [];
  for (
    let e: unknown = error, depth = 0;
    e !== undefined && e !== null && depth < 4;
    e = (e as { cause?: unknown }).cause, depth++
  ) {
    parts.push(describeError(e), String((e as { code?: unknown }).code ?? ''));
  }
  return parts.join(' | ');
}

/**
 * Why connecting to Temporal failed, in words a person can act on, instead of a raw transport error such as
 * `tonic::transport::Error(Transport, ConnectError(...))` or `Failed to connect before the deadline`. The
 * patterns cover the worker's rustls/tonic errors, the client's grpc-js statuses, node:tls codes (from
 * temporal/tls-probe.ts) and the HTTP statuses a TLS proxy answers. The words never quote a key or certificate.
 */
export function connectionFailureInWords(error: unknown, credentials?: ConnectionCredentials): string {
  const text = textOf(error);
  const tlsOn = credentials?.tls !== undefined;
  if (
    /UnknownIssuer|UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT|UNABLE_TO_GET_ISSUER_CERT|self[- ]signed certificate|unable to verify the first certificate/i.test(
      text,
    )
  ) {
    return UNTRUSTED_SERVER;
  }
  if (/NotValidForName|ERR_TLS_CERT_ALTNAME_INVALID|does not match certificate's altnames/i.test(text)) {
    return "the server's certificate is not valid for this host name: set TEMPORAL_TLS_SERVER_NAME to a name it holds";
  }
  if (/\bExpired\b|CERT_HAS_EXPIRED/.test(text)) return "the server's certificate has expired";
  // A TLS alert (Temporal Cloud refuses in the handshake) or a TLS proxy's 400 (nginx answers after it).
  if (
    /CertificateRequired|certificate required|BadCertificate|bad certificate|UnknownCA|unknown ca\b|status: 400 Bad Request|HTTP status code 400/i.test(
      text,
    )
  ) {
    return credentials?.clientCertificate
      ? 'the server refused the client certificate'
      : 'the server demands a client certificate: set TEMPORAL_TLS_CLIENT_CERT_PATH and ' +
          'TEMPORAL_TLS_CLIENT_KEY_PATH (or _DATA)';
  }
  if (
    /UNAUTHENTICATED|PERMISSION_DENIED|status: 401 Unauthorized|HTTP status code 401|status: 403 Forbidden|HTTP status code 403/i.test(
      text,
    )
  ) {
    return credentials?.apiKey
      ? 'the API key was refused: is TEMPORAL_API_KEY right?'
      : 'the server demands an API key: set TEMPORAL_API_KEY';
  }
  if (/GoAway|FRAME_SIZE_ERROR|WRONG_VERSION_NUMBER|wrong version number|packet length too long/i.test(text)) {
    return tlsOn
      ? 'the server does not speak TLS there: is TEMPORAL_TLS right?'
      : 'the server expects TLS: set TEMPORAL_TLS=true (and its certificate settings)';
  }
  if (
    /refused|ConnectError|tcp connect|Failed to connect before the deadline|UNAVAILABLE|No connection established/i.test(
      text,
    )
  ) {
    return 'nothing answered there: is the Temporal server running, and is TEMPORAL_ADDRESS right?';
  }
  if (/deadline|timed? ?out|DEADLINE_EXCEEDED/i.test(text)) return 'the server did not answer in time';
  if (/dns|ENOTFOUND|resolve/i.test(text)) return 'the host name does not resolve';
  return describeError(error);
}
