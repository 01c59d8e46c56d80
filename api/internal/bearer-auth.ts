import type { Middleware } from 'koa';
import { bearerTokenChecker } from '../../lib/bearer-token';

/** Requires `Authorization: Bearer <token>`, compared in constant time; answers 401 in the `{"detail"}` shape. */
export function requireBearerToken(token: string): Middleware {
  const check = bearerTokenChecker(token);
  return async (ctx, next) => {
    const result = check(ctx.get('authorization'));
    if (result !== 'valid') {
      ctx.status = 401;
      ctx.set('WWW-Authenticate', 'Bearer realm="internal"');
      ctx.body = { detail: result === 'missing' ? 'Authentication credentials were not provided.' : 'Invalid token.' };
      return;
    }
    await next();
  };
}
