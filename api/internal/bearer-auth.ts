import type { Middleware } from 'koa';
import { bearerTokenChecker } from '../../lib/bearer-token';
import { InternalApiError } from './errors';

/** Requires `Authorization: Bearer <token>`, compared in constant time; 401 (naming `realm`) otherwise. */
export function requireBearerToken(token: string, realm = 'internal'): Middleware {
  const check = bearerTokenChecker(token);
  return async function requireInternalToken(ctx, next) {
    const result = check(ctx.get('authorization'));
    if (result !== 'valid') {
      const detail = result === 'missing' ? 'Authentication credentials were not provided.' : 'Invalid token.';
      throw new InternalApiError(401, { detail }, { 'WWW-Authenticate': `Bearer realm="${realm}"` });
    }
    await next();
  };
}
