import type { Middleware } from 'koa';
import { DETAIL, ListingError } from './errors';

export const ALLOWED_METHODS = ['GET', 'HEAD', 'OPTIONS'] as const;
const ALLOW_HEADER = ALLOWED_METHODS.join(', ');

export interface ListingDescription {
  readonly name: string;
  readonly description: string;
}

/**
 * Read-only endpoints, the DRF way: every response carries `Allow`, OPTIONS answers the view's metadata,
 * and any other method gets 405 before authentication, so it costs no database work.
 */
export function readOnlyMethods(view: ListingDescription): Middleware {
  const metadata = { ...view, renders: ['application/json'], parses: ['application/json'] };
  return async function readOnlyMethods(ctx, next) {
    ctx.set('Allow', ALLOW_HEADER);
    if (ctx.method === 'GET' || ctx.method === 'HEAD') return next();
    if (ctx.method === 'OPTIONS') {
      ctx.body = metadata;
      return;
    }
    throw new ListingError(405, DETAIL.methodNotAllowed(ctx.method));
  };
}
