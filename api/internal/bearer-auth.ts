import type { Middleware } from 'koa';
import { hashAppKey, verifyAppKey } from '../../lib/app-keys';

const BEARER = /^Bearer +(\S+) *$/i;

/** Requires `Authorization: Bearer <token>`, compared in constant time; answers 401 in the `{"detail"}` shape. */
export function requireBearerToken(token: string): Middleware {
  const stored = hashAppKey(token);
  return async (ctx, next) => {
    const presented = BEARER.exec(ctx.get('authorization'))?.[1];
    if (presented === undefined || !verifyAppKey(presented, stored)) {
      ctx.status = 401;
      ctx.set('WWW-Authenticate', 'Bearer realm="internal"');
      ctx.body = {
        detail: presented === undefined ? 'Authentication credentials were not provided.' : 'Invalid token.',
      };
      return;
    }
    await next();
  };
}
