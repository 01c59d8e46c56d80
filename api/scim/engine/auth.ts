import type { Middleware } from 'koa';
import { bearerTokenChecker } from '../../../lib/bearer-token';
import { ScimError } from './errors';

/** Every request needs `Authorization: Bearer <token>`, compared in constant time. */
export function bearerAuth(token: string): Middleware {
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
