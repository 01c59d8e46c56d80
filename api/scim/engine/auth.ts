import type { Middleware } from 'koa';
import { bearerTokenChecker } from '../../../lib/bearer-token';
import { ScimError } from './errors';

/**
 * With a token configured, every request needs `Authorization: Bearer <token>`, compared in constant
 * time. Without one, requests pass.
 */
export function bearerAuth(token: string | undefined): Middleware {
  if (!token) return (_ctx, next) => next();
  const check = bearerTokenChecker(token);
  return async function requireScimToken(ctx, next) {
    if (check(ctx.get('authorization')) !== 'valid') {
      throw new ScimError(401, 'A valid bearer token is required: send Authorization: Bearer <token>', undefined, {
        'WWW-Authenticate': 'Bearer realm="SCIM"',
      });
    }
    await next();
  };
}
