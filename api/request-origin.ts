import type { Context } from 'koa';

// Django's host_validation_re: a name or bracketed IPv6 address, then an optional port.
const VALID_HOST = /^([a-z0-9.-]+|\[[a-f0-9]*:[a-f0-9.:]+\])(:\d{1,5})?$/i;

/**
 * `scheme://host` of this request for building absolute URLs, or undefined when the Host (or, with
 * TRUST_PROXY, X-Forwarded-Host) is not a valid host name, so no caller echoes an arbitrary header into a
 * link. As in Django, the scheme is https only when the request (or X-Forwarded-Proto) says exactly that.
 */
export function requestOrigin(ctx: Context): string | undefined {
  const host = ctx.host;
  if (!VALID_HOST.test(host)) return undefined;
  return `${ctx.protocol === 'https' ? 'https' : 'http'}://${host}`;
}
