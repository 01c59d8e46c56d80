import type { Context } from 'koa';
import { requestOrigin } from '../request-origin';

/** A keyset-paged list's `next` link: this request's URL with `cursor` set, or null on the last page. */
export function nextPageLink(ctx: Context, nextCursor: string | null): string | null {
  if (!nextCursor) return null;
  const query = new URLSearchParams(ctx.querystring);
  query.set('cursor', nextCursor);
  // Absolute when the Host header is a valid host name, else a path: never an echo of an arbitrary header.
  return `${requestOrigin(ctx) ?? ''}${ctx.path}?${query}`;
}
