/**
 * A Retry-After holds deliveries at most this long (Standard Webhooks asks senders to honour it; Hook0 caps at 10 h).
 */
export const RETRY_AFTER_CAP_MS = 60 * 60 * 1000;

/**
 * The delay a 429 or 503 answer asks for (RFC 9110 10.2.3: delay-seconds or an HTTP date), capped at an hour;
 * undefined for other statuses and for a missing or unreadable header.
 */
export function retryAfterMs(status: number, header: string | string[] | undefined, now: number): number | undefined {
  if ((status !== 429 && status !== 503) || header === undefined) return undefined;
  const value = (Array.isArray(header) ? header[0] : header).trim();
  const ms = /^\d+$/.test(value) ? Number(value) * 1000 : Date.parse(value) - now;
  if (!Number.isFinite(ms)) return undefined;
  return Math.min(Math.max(0, Math.ceil(ms)), RETRY_AFTER_CAP_MS);
}
