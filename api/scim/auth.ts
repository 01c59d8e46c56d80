import { createHash, timingSafeEqual } from 'node:crypto';
import type { Middleware } from 'koa';
import { ScimError } from './errors';

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();
const BEARER = /^Bearer +(\S+) *$/i;

/**
 * With a token configured, every request needs `Authorization: Bearer <token>`; the presented token is
 * compared in constant time (both sides hashed to equal length first). Without one, requests pass.
 */
export function bearerAuth(token: string | undefined): Middleware {
  if (!token) return (_ctx, next) => next();
  const expected = digest(token);
  return async (ctx, next) => {
    const presented = BEARER.exec(ctx.get('authorization'))?.[1];
    if (presented === undefined || !timingSafeEqual(digest(presented), expected)) {
      throw new ScimError(401, 'A valid bearer token is required: send Authorization: Bearer <token>', undefined, {
        'WWW-Authenticate': 'Bearer realm="SCIM"',
      });
    }
    await next();
  };
}
