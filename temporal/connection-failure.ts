import { describeError } from '../lib/describe-error';

/**
 * Why connecting to Temporal failed, in words a person can act on, instead of a raw transport error such as
 * `tonic::transport::Error(Transport, ConnectError(...))` or `Failed to connect before the deadline`.
 */
export function connectionFailureInWords(error: unknown): string {
  const text = describeError(error);
  if (/refused|ConnectError|tcp connect|Failed to connect before the deadline|UNAVAILABLE|No connection established/i.test(text)) {
    return 'nothing answered there: is the Temporal server running, and is TEMPORAL_ADDRESS right?';
  }
  if (/deadline|timed? ?out|DEADLINE_EXCEEDED/i.test(text)) return 'the server did not answer in time';
  if (/dns|ENOTFOUND|resolve/i.test(text)) return 'the host name does not resolve';
  return text;
}
