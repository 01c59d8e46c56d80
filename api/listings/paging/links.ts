import type { Context } from 'koa';
import { DETAIL, ListingError } from '../errors';
import type { ListingScope } from '../scope';
import { encodeCursor } from './cursor';
import type { LinkTarget } from './load-page';
import { CURSOR_PARAM, PAGE_PARAM } from './page-params';

// Django's host_validation_re: a name or bracketed IPv6 address, then an optional port.
const VALID_HOST = /^([a-z0-9.-]+|\[[a-f0-9]*:[a-f0-9.:]+\])(:\d{1,5})?$/i;

/**
 * The absolute URL of this request. Koa's `proxy` setting (TRUST_PROXY) decides whether X-Forwarded-Proto
 * and X-Forwarded-Host count; as in Django, the scheme is https only when it says exactly that.
 */
export function requestUrl(ctx: Context): URL {
  const host = ctx.host;
  if (!VALID_HOST.test(host)) throw new ListingError(400, DETAIL.invalidHost);
  const url = new URL(`${ctx.protocol === 'https' ? 'https' : 'http'}://${host}`);
  url.pathname = ctx.path;
  url.search = ctx.querystring;
  return url;
}

/** DRF's replace_query_param: keeps the other parameters, sets the page ones, sorts by name. */
export function linkUrl(requested: URL, scope: ListingScope, target: LinkTarget): string {
  const url = new URL(requested);
  const query = url.searchParams;
  query.delete(PAGE_PARAM);
  query.delete(CURSOR_PARAM);
  if (target.cursor) {
    query.set(PAGE_PARAM, String(target.page));
    query.set(CURSOR_PARAM, encodeCursor(scope, target.cursor));
  }
  query.sort();
  return url.toString();
}
