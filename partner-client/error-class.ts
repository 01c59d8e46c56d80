import type { AttemptErrorClass } from '../lib/vocabulary';

const TIMEOUT_CODES = new Set([
  'ETIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);
const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME', 'EAI_FAIL', 'EAI_NODATA']);
const RESET_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);
const TLS_CODES = new Set([
  'EPROTO',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
]);

/** Every `code` (and message) along an error's `cause` chain: undici wraps the socket error it met. */
function errorChain(error: unknown): Array<{ code?: string; message: string }> {
  const chain: Array<{ code?: string; message: string }> = [];
  for (let current = error, depth = 0; current && depth < 5; depth++) {
    const e = current as { code?: unknown; message?: unknown; cause?: unknown };
    chain.push({ code: typeof e.code === 'string' ? e.code : undefined, message: String(e.message ?? current) });
    current = e.cause;
  }
  return chain;
}

const isTls = (code: string | undefined, message: string) =>
  (code !== undefined &&
    (TLS_CODES.has(code) || code.startsWith('ERR_TLS') || code.startsWith('ERR_SSL') || code.startsWith('CERT_'))) ||
  /\bSSL\b|\bTLS\b|certificate/i.test(message);

/** Maps a failed request to the recorded error class. A request this service aborted at its deadline is a timeout. */
export function classifyRequestError(
  error: unknown,
  timedOut: boolean,
): { errorClass: AttemptErrorClass; errorMessage: string } {
  const chain = errorChain(error);
  const describe = () => {
    const deepest = chain[chain.length - 1] ?? { message: String(error) };
    const text = deepest.code ? `${deepest.code}: ${deepest.message}` : deepest.message;
    return text.slice(0, 500);
  };
  if (timedOut)
    return { errorClass: 'timeout', errorMessage: 'no response within the per-attempt timeout (PARTNER_TIMEOUT_MS)' };
  const has = (set: Set<string>) => chain.some((e) => e.code !== undefined && set.has(e.code));
  let errorClass: AttemptErrorClass = 'other';
  if (has(TIMEOUT_CODES)) errorClass = 'timeout';
  else if (chain.some((e) => e.code === 'ECONNREFUSED')) errorClass = 'connection_refused';
  else if (has(DNS_CODES)) errorClass = 'dns';
  else if (chain.some((e) => isTls(e.code, e.message))) errorClass = 'tls';
  else if (has(RESET_CODES)) errorClass = 'reset';
  return { errorClass, errorMessage: describe() };
}
