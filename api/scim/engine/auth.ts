import type { Middleware } from 'koa';
import { bearerTokenChecker } from '../../../lib/bearer-token';
import { ScimError } from './errors';
import { refuse } from '../../auth-failures';

/** Every request needs `Authorization: Bearer <token>`, compared in constant time. */
export function bearerAuth(token: string): Middleware {
  const check = bearerTokenChecker(token);
  return async function requireScimToken(ctx, next) {
    const result = check(ctx.get('authorization'));
    if (result !== 'valid') {
      refuse(ctx, result === 'missing' ? 'missing_token' : 'invalid_token');
      throw new ScimError(401, 'A valid bearer token is required: send Authorization: Bearer <token>', undefined, {
        'WWW-Authenticate': 'Bearer realm="SCIM"',
      });
    }
    await next();
  };
}
