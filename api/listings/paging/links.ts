import type { Context } from 'koa';
import { requestOrigin } from '../../request-origin';
import { DETAIL, ListingError } from '../errors';
import type { ListingScope } from '../scope';
import { encodeCursor } from './cursor';
import type { LinkTarget } from './load-page';
import { CURSOR_PARAM, PAGE_PARAM } from './page-params';

/**
 * The absolute URL of this request. Koa's `proxy` setting (TRUST_PROXY) decides whether X-Forwarded-Proto
 * and X-Forwarded-Host count.
 */
export function requestUrl(ctx: Context): URL {
  const origin = requestOrigin(ctx);
  if (!origin) throw new ListingError(400, DETAIL.invalidHost);
  const url = new URL(origin);
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
